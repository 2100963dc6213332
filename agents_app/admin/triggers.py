"""Inbound triggers in the studio (docs/automation.md, "Triggers"): create one (its URL is
shown once, like an API key), edit its name, template and signing secret's env name, revoke.
The token itself is never stored or shown again: only its hash and first characters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from agents_app.admin.owned import OwnedAdminMixin
from agents_app.base.errors import DomainError
from agents_app.models import Trigger
from agents_app.pages import trigger_examples
from agents_app.services.automation import triggers

TEMPLATE_MISSING = (
    "Write the message the agent receives, with {{ field }} where a field of the request goes."
)


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
        error_messages = {"template": {"required": TEMPLATE_MISSING}}

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
            # The API's "field: reason", as a sentence on the field it is about.
            if exc.message.startswith("template:"):
                self.add_error("template", TEMPLATE_MISSING)
            elif exc.message.startswith("secretEnv:"):
                self.add_error(
                    "secret_env",
                    f"There is no secret named {probe.secret_env}: add it under Env values "
                    "first, or leave this empty to accept unsigned requests.",
                )
            else:
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

    class Media:
        css = {"all": ("studio/people_forms.css",)}

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
        # Kept on the object for ``response_add`` alone: never stored, never in a message
        # (the message storage is a cookie), shown once on the page that answers the save.
        obj._issued_token = triggers.trigger_issue(obj)  # type: ignore[attr-defined]

    def response_add(
        self, request: HttpRequest, obj: Trigger, post_url_continue: Any = None
    ) -> Any:
        token = getattr(obj, "_issued_token", None)
        if token is None:
            return super().response_add(request, obj, post_url_continue)
        url = request.build_absolute_uri(f"/api/inbound/{token}")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Trigger created: copy its URL now",
            "trigger": obj,
            "url": url,
            "curl": trigger_examples.curl_example(url, obj.template, obj.secret_env),
        }
        response = TemplateResponse(request, "admin/agents_app/trigger/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected triggers")
    def revoke(self, request: HttpRequest, queryset: QuerySet[Trigger]) -> None:
        live = list(queryset.filter(revoked_at__isnull=True))
        for row in live:
            triggers.trigger_revoke(row.pk, queryset)
        self.message_user(request, f"Revoked {len(live)} trigger(s).", messages.SUCCESS)
