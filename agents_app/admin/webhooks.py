"""Outbound webhooks in the studio: subscriptions, and deliveries (status, attempts, response
code) with a redeliver action. The secret is an env value's name; its value is never shown."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from agents_app.admin.owned import OwnedAdminMixin
from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.base.errors import DomainError
from agents_app.forms.webhooks import EVENT_WORDS, WebhookSubscriptionForm, events_in_words
from agents_app.models import WebhookDelivery, WebhookSubscription
from agents_app.orchestration.webhook_runner import enqueue
from agents_app.services.automation import owner_rights, webhooks


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(OwnedAdminMixin, admin.ModelAdmin):
    form = WebhookSubscriptionForm
    owned_kind = "webhooksubscription"
    list_display = (
        "__str__",
        "agent",
        "shown_events",
        "secret_env",
        "active",
        "owner",
        "stopped_because",
    )
    list_filter = ("active", "agent")

    class Media:
        css = {"all": ("studio/people_forms.css",)}

    @admin.display(description="Sends when")
    def shown_events(self, obj: WebhookSubscription) -> str:
        return events_in_words(obj.events)

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
        "shown_event",
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

    @admin.display(description="Event", ordering="event")
    def shown_event(self, obj: WebhookDelivery) -> str:
        return format_html(
            '<span title="{}">{}</span>', obj.event, EVENT_WORDS.get(obj.event, (obj.event,))[0]
        )

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
