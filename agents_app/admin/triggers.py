"""Inbound triggers in the studio (docs/automation.md, "Triggers"): create one (its URL is
shown once, like an API key), edit its name, template and signing secret's env name, revoke.
The token itself is never stored or shown again: only its hash and first characters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents_app.admin.owned import OwnedAdminMixin
from agents_app.errors import DomainError
from agents_app.models import Trigger
from agents_app.services import triggers


class TriggerForm(forms.ModelForm):
    class Meta:
        model = Trigger
        fields = ("agent", "name", "template", "secret_env")
        help_texts = {
            "template": "The message the agent receives; {{ a.b }} is replaced by the request "
            "JSON's field a.b (text as is, anything else as JSON).",
            "secret_env": "Optional: the name of an env value (agent or instance scope) whose "
            "secret signs the sender's requests (Webhook-Signature, docs/automation.md).",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        probe = Trigger(
            agent=data.get("agent") or getattr(self.instance, "agent", None),
            template=data.get("template") or "",
            secret_env=data.get("secret_env") or "",
        )
        try:
            triggers.trigger_check(probe)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None
        return data


@admin.register(Trigger)
class TriggerAdmin(OwnedAdminMixin, admin.ModelAdmin):
    form = TriggerForm
    owned_kind = "trigger"
    list_display = ("__str__", "name", "owner", "created_at", "last_used_at", "status")
    list_filter = ("agent", "revoked_at")
    search_fields = ("name", "agent__name", "token_prefix")
    list_select_related = ("agent", "owner")
    actions = ["revoke"]

    def get_fields(self, request: HttpRequest, obj: Trigger | None = None) -> Any:
        if obj is None:
            return ("agent", "name", "template", "secret_env")
        return (
            "agent",
            "masked",
            "name",
            "template",
            "secret_env",
            "owner",
            "created_at",
            "last_used_at",
            "revoked_at",
            "disabled_reason",
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Trigger | None = None) -> Any:
        if obj is None:
            return ()
        fields = ["agent", "masked", "created_at", "last_used_at", "revoked_at", "disabled_reason"]
        if not self.manages_others(request):
            fields.append("owner")  # the hand-over is for holders of manage_others_trigger
        return fields

    @admin.display(description="URL")
    def masked(self, obj: Trigger) -> str:
        return f"/api/inbound/{obj.token_prefix}… (shown once, when it was created)"

    @admin.display(description="Status")
    def status(self, obj: Trigger) -> str:
        if obj.revoked_at:
            return "revoked"
        return f"disabled: {obj.disabled_reason}" if obj.disabled_reason else "live"

    def save_model(self, request: HttpRequest, obj: Trigger, form: Any, change: bool) -> None:
        if change:
            self.handed_over(request, obj, form, change)
            obj.save()
            return
        obj.owner = request.user  # type: ignore[assignment]
        token = triggers.trigger_issue(obj)
        url = request.build_absolute_uri(f"/api/inbound/{token}")
        self.message_user(
            request,
            f"Copy this trigger URL now; it is not shown again: {url}",
            messages.WARNING,
        )

    @admin.action(description="Revoke the selected triggers")
    def revoke(self, request: HttpRequest, queryset: QuerySet[Trigger]) -> None:
        live = list(queryset.filter(revoked_at__isnull=True))
        for row in live:
            triggers.trigger_revoke(row.pk, queryset)
        self.message_user(request, f"Revoked {len(live)} trigger(s).", messages.SUCCESS)
