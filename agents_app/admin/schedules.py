"""Recurring schedules in the studio: the timing chosen from presets (``forms.schedules``),
the next five runs shown for confirmation before the first save of a new or changed timing
(a neutral box, not an error), then in the schedule's own zone; pause, resume and run now as
actions; each run titled in words and linked to its thread."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from agents_app.admin.owned import OwnedAdminMixin
from agents_app.base.errors import DomainError
from agents_app.forms.schedules import ScheduleForm
from agents_app.models import Schedule, ScheduleRun
from agents_app.orchestration.schedule_runner import run_start
from agents_app.services.automation import schedule_timing, schedules
from agents_app.services.sessions.lifecycle import owner_id

# The form's fields that change what a run posts, or where (services.automation.schedules.schedule_saved_in_studio).
OWNER_FIELDS = ("agent", "message", "target", "upload", "drop_files", "env_lines")
RUN_STATUS: dict[str, str] = {
    ScheduleRun.Status.CLAIMED: "Starting",
    ScheduleRun.Status.STARTED: "Started",
    ScheduleRun.Status.FAILED: "Could not start",
}


class RunInline(admin.TabularInline):
    model = ScheduleRun
    extra = 0
    can_delete = False
    fields = ("shown_due", "shown_how", "shown_status", "thread_link", "shown_started")
    readonly_fields = fields
    ordering = ("-due_at",)
    max_num = 0
    verbose_name_plural = "Runs"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ScheduleRun]:
        return super().get_queryset(request).select_related("schedule")

    @admin.display(description="Due")
    def shown_due(self, obj: ScheduleRun) -> str:
        return schedule_timing.in_zone(obj.due_at, obj.schedule.timezone)

    @admin.display(description="How")
    def shown_how(self, obj: ScheduleRun) -> str:
        how = "By hand (Run now)" if obj.manual else "On schedule"
        if obj.skipped:
            how += f"; {obj.skipped} missed run{'s' if obj.skipped != 1 else ''} skipped"
        return how

    @admin.display(description="Outcome")
    def shown_status(self, obj: ScheduleRun) -> str:
        words = RUN_STATUS.get(obj.status, obj.status)
        if obj.status == ScheduleRun.Status.FAILED and obj.error:
            return format_html('<span class="studio-failed">{}</span>: {}', words, obj.error)
        return words

    @admin.display(description="Started")
    def shown_started(self, obj: ScheduleRun) -> str:
        if obj.started_at is None:
            return "–"
        return schedule_timing.in_zone(obj.started_at, obj.schedule.timezone)

    @admin.display(description="Thread")
    def thread_link(self, obj: ScheduleRun) -> str:
        if not obj.thread_id:
            return "–"
        url = reverse("admin:agents_app_thread_change", args=[obj.thread_id])
        return format_html('<a href="{}">Open the thread</a>', url)


@admin.register(Schedule)
class ScheduleAdmin(OwnedAdminMixin, admin.ModelAdmin):
    form = ScheduleForm
    owned_kind = "schedule"
    list_display = (
        "__str__",
        "agent",
        "timing",
        "target",
        "shown_state",
        "next_run",
        "owner",
        "stopped_because",
    )
    list_filter = ("paused", "target", "agent")
    readonly_fields = ("next_runs", "standing_thread", "owner", "paused_reason")
    inlines = [RunInline]
    actions = ["pause", "resume", "run_now"]

    class Media:
        js = ("studio/schedule_builder.js",)  # shows the fields the chosen "Repeat" uses
        css = {"all": ("studio/people_forms.css",)}

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        kept = ("standing_thread", "owner", "paused_reason") if obj is not None else ()
        return [
            (None, {"fields": ("name", "agent", "message")}),
            (
                "When it runs",
                {"fields": ("repeat", "every", "at", "days", "day_of_month", "timezone")},
            ),
            (
                "Advanced timing (cron)",
                {"classes": ("studio-schedule-advanced",), "fields": ("cron", "interval_seconds")},
            ),
            (
                "Files and env values (optional)",
                {"fields": ("upload", "drop_files", "env_lines")},
            ),
            (
                "How it runs",
                {"fields": ("target", "catch_up", "paused", "previewed", "next_runs", *kept)},
            ),
        ]

    def get_inline_instances(self, request: HttpRequest, obj: Any = None) -> Any:
        # An empty "Runs" table says nothing; it appears with the first run.
        if obj is None or not obj.runs.exists():
            return []
        return super().get_inline_instances(request, obj)

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> Any:
        form = context["adminform"].form
        if isinstance(form, ScheduleForm) and form.only_waits_for_confirmation():
            # Not a mistake: no "Please correct the error below", the box asks to confirm.
            context["errors"] = []
            context["schedule_preview"] = form.preview
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description="Timing")
    def timing(self, obj: Schedule) -> str:
        return schedule_timing.describe(schedules.spec_of(obj))

    @admin.display(description="State", ordering="paused")
    def shown_state(self, obj: Schedule) -> str:
        # Not the admin's red ✗ for "not paused", which reads as a failure.
        return "Paused" if obj.paused else "On"

    @admin.display(description="Next run", ordering="next_run_at")
    def next_run(self, obj: Schedule) -> str:
        if obj.paused or obj.next_run_at is None:
            return "– (paused)" if obj.paused else "–"
        return f"{schedule_timing.in_zone(obj.next_run_at, obj.timezone)} ({obj.timezone})"

    @admin.display(description="Next five runs")
    def next_runs(self, obj: Schedule) -> str:
        if obj._state.adding:
            return "Shown before you save, to confirm."
        spec = schedules.spec_of(obj)
        try:
            times = schedules.next_times(spec, 5)
        except DomainError as exc:
            return exc.message
        shown = ((schedule_timing.in_zone(t, obj.timezone),) for t in times)
        return format_html(
            '<p class="studio-timing">{}</p><ol class="studio-next-runs">{}</ol>'
            '<p class="studio-quiet">Times in {}.{}</p>',
            schedule_timing.describe(spec),
            format_html_join("", "<li>{}</li>", shown),
            obj.timezone,
            " Paused: none of these runs until it is resumed." if obj.paused else "",
        )

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        if not change:
            obj.owner = request.user  # type: ignore[assignment]
        handed = self.handed_over(request, obj, form, change)
        changed = not change or form.timing_changed
        words = change and not handed and bool(set(form.changed_data) & set(OWNER_FIELDS))
        schedules.schedule_saved_in_studio(
            obj, spec_changed=changed, editor=request.user, words_changed=words
        )
        super().save_model(request, obj, form, change)
        if obj.paused_reason and words:
            self.message_user(request, obj.paused_reason, messages.WARNING)

    @admin.action(description="Pause", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            schedules.schedule_pause(row, True, actor=request.user)

    @admin.action(description="Resume", permissions=["change"])
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            try:
                schedules.schedule_pause(row, False, actor=request.user)
            except DomainError as exc:
                self.message_user(request, f"{row}: {exc.message}", messages.ERROR)

    @admin.action(description="Run now", permissions=["change"])
    def run_now(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        me = owner_id()
        for row in queryset[:20]:
            try:
                manual = schedules.manual_run(row, me)
            except DomainError as exc:
                self.message_user(request, f"{row}: {exc.message}", messages.ERROR)
                continue
            run = run_start(manual, me)
            if run.status == ScheduleRun.Status.STARTED:
                self.message_user(request, f"{row}: the run started.", messages.SUCCESS)
            else:
                self.message_user(
                    request, f"{row}: the run could not start: {run.error}", messages.ERROR
                )
