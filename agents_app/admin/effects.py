"""Scheduled effects across all threads: filter by status, effect and thread; cancel or run now.

Rows are never edited by hand (the sweep relies on its claims). The two actions go
through the same services as the API (``agents_app.services.sessions.effects``): cancel
turns pending runs into ``user_canceled``; run now executes a pending run in the
request, or replays a finished one as a new run linked to it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.base.errors import DomainError
from agents_app.models import ScheduledEffect
from agents_app.orchestration.effect_runner import effect_run
from agents_app.services.sessions.effects import effect_cancel

# Run now executes handlers inside the request: keep one action's work bounded.
MAX_RUN_NOW = 20


class ThreadFilter(admin.SimpleListFilter):
    """``?thread=<id>`` shows one thread's runs; the sidebar offers threads with upcoming runs."""

    title = "thread"
    parameter_name = "thread"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        upcoming = (
            ScheduledEffect.objects.filter(status__in=("pending", "processing"))
            .order_by("thread_id")
            .values_list("thread_id", flat=True)
            .distinct()[:20]
        )
        return [(str(pk), str(pk)[:8]) for pk in upcoming]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(thread_id=value) if value else queryset


@admin.register(ScheduledEffect)
class ScheduledEffectAdmin(ReadOnlyAdmin):
    empty_help = (
        "No scheduled effects yet. Effects are work a tool or hook asks to run later (a "
        "reminder, a follow-up message); they appear here when an agent schedules one, with "
        "when it is due and how it went."
    )
    list_display = (
        "name",
        "thread",
        "status",
        "due_at",
        "tries",
        "manual_run",
        "replayed_from",
        "completed_at",
        "short_error",
    )
    list_filter = ("status", "name", ThreadFilter, "manual_run")
    search_fields = ("name", "thread__id", "error")
    list_select_related = ("thread__agent",)
    date_hierarchy = "due_at"
    actions = ["cancel", "run_now"]

    @admin.display(description="Attempts")
    def tries(self, obj: ScheduledEffect) -> str:
        return f"{obj.attempts} of {obj.max_attempts}"

    @admin.display(description="Error")
    def short_error(self, obj: ScheduledEffect) -> str:
        return obj.error if len(obj.error) <= 80 else obj.error[:79] + "…"

    @admin.action(description="Cancel the selected pending effects")
    def cancel(self, request: HttpRequest, queryset: QuerySet[ScheduledEffect]) -> None:
        canceled = skipped = 0
        for effect in queryset:
            try:
                effect_cancel(effect=effect, by="user")
                canceled += 1
            except DomainError:  # no longer pending: it ran, or someone canceled it first
                skipped += 1
        self.message_user(request, f"Canceled {canceled} effect(s).", messages.SUCCESS)
        if skipped:
            self.message_user(
                request, f"{skipped} effect(s) were not pending and were left alone.", messages.INFO
            )

    @admin.action(description="Run now (pending) or replay (finished) the selected effects")
    def run_now(self, request: HttpRequest, queryset: QuerySet[ScheduledEffect]) -> None:
        effects = list(queryset[: MAX_RUN_NOW + 1])
        if len(effects) > MAX_RUN_NOW:
            self.message_user(
                request, f"Select at most {MAX_RUN_NOW} effects to run at once.", messages.ERROR
            )
            return
        for effect in effects:
            try:
                result = effect_run(effect=effect, owner="admin")
            except DomainError as exc:
                self.message_user(request, f"Not run: {exc.message}", messages.WARNING)
                continue
            level = messages.ERROR if result["status"] == "failed" else messages.SUCCESS
            action = "Replayed" if result["action"] == "replayed" else "Ran"
            detail = f" ({result['error']})" if result.get("error") else ""
            self.message_user(request, f"{action} {effect.name}: {result['status']}{detail}", level)
