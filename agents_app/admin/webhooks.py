"""Outbound webhooks in the studio: subscriptions, and deliveries (status, attempts, response
code) with a redeliver action. The secret is an env value's name; its value is never shown."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents_app.admin.owned import OwnedAdminMixin
from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.errors import DomainError
from agents_app.models import WebhookDelivery, WebhookSubscription
from agents_app.models.webhooks import EVENTS
from agents_app.orchestration.webhook_runner import enqueue
from agents_app.services import owner_rights, webhooks


class WebhookSubscriptionForm(forms.ModelForm):
    # Declared for its scheme: an address typed without one is taken as https:// (Django 6's
    # default; the model field's form would assume http:// and warn that this changes).
    url = forms.URLField(max_length=2000, assume_scheme="https", label="URL")

    class Meta:
        model = WebhookSubscription
        fields = ("agent", "url", "secret_env", "events", "active")
        help_texts = {
            "secret_env": "The name of the env value (agent or instance scope) that signs.",
            "events": f"A JSON list of: {', '.join(EVENTS)}.",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        events = data.get("events")
        if not isinstance(events, list) or not events or set(events) - set(EVENTS):
            self.add_error("events", f"A list of: {', '.join(EVENTS)}")
        # The same check and sentence as the API, on the field: URLField lets through ports
        # out of range and addresses the egress policy refuses, and says only "Enter a valid
        # URL." of what it refuses itself.
        url = data.get("url") or self.data.get(self.add_prefix("url"), "")
        if url:
            try:
                webhooks.check_url(url)
            except DomainError as exc:
                self.add_error("url", exc.message)
        try:
            probe = WebhookSubscription(
                agent=data.get("agent"), secret_env=data.get("secret_env") or ""
            )
            webhooks.secret_of(probe)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None
        return data


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(OwnedAdminMixin, admin.ModelAdmin):
    form = WebhookSubscriptionForm
    owned_kind = "webhooksubscription"
    list_display = (
        "__str__",
        "agent",
        "events",
        "secret_env",
        "active",
        "owner",
        "stopped_because",
    )
    list_filter = ("active", "agent")

    def get_fields(self, request: HttpRequest, obj: WebhookSubscription | None = None) -> Any:
        fields = list(WebhookSubscriptionForm.Meta.fields)
        return fields if obj is None else [*fields, "owner", "disabled_reason"]

    def get_readonly_fields(
        self, request: HttpRequest, obj: WebhookSubscription | None = None
    ) -> Any:
        if obj is None:
            return ()
        # The owner is a hand-over for holders of manage_others_webhooksubscription alone.
        return ["disabled_reason"] + ([] if self.manages_others(request) else ["owner"])

    def save_model(
        self, request: HttpRequest, obj: WebhookSubscription, form: Any, change: bool
    ) -> None:
        if not change:
            obj.owner = request.user  # type: ignore[assignment]
        self.handed_over(request, obj, form, change)
        super().save_model(request, obj, form, change)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "event",
        "subscription",
        "status",
        "attempts",
        "response_code",
        "error",
        "delivered_at",
    )
    list_filter = ("status", "event")
    search_fields = ("id", "subject")
    list_select_related = ("subscription__agent",)
    actions = ["redeliver"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookDelivery]:
        rows = super().get_queryset(request)
        if request.user.has_perm(owner_rights.MANAGE_OTHERS["webhooksubscription"]):
            return rows
        return rows.filter(subscription__owner_id=request.user.pk)

    @admin.action(description="Redeliver (same delivery id)")
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        done = []
        for row in queryset[:50]:
            try:
                done.append(str(webhooks.redeliver(str(row.pk)).pk))
            except DomainError as exc:
                self.message_user(request, f"{row.pk}: {exc.message}", messages.WARNING)
        enqueue(done)
        self.message_user(request, f"{len(done)} delivery(ies) queued again.", messages.SUCCESS)
