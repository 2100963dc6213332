"""API keys and WebSocket tickets. Key hashes and ticket hashes are never shown."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.models import ApiKey, WebSocketTicket
from agents_app.services.api_keys import api_key_revoke


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created through the API (the key is shown once there); here: rename, revoke."""

    list_display = ("name", "user", "masked", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "user__username", "last_five")
    list_select_related = ("user",)
    fields = ("name", "user", "masked", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("user", "masked", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="Key")
    def masked(self, obj: ApiKey) -> str:
        return f"{obj.key_prefix}…{obj.last_five}"

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        active = list(queryset.filter(revoked_at__isnull=True))
        for key in active:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {len(active)} key(s).", messages.SUCCESS)


@admin.register(WebSocketTicket)
class WebSocketTicketAdmin(ReadOnlyAdmin):
    list_display = ("pathname", "user", "created_at", "expires_at", "used_at")
    search_fields = ("pathname", "user__username")
    list_select_related = ("user",)
    fields = ("pathname", "user", "created_at", "expires_at", "used_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.fields
