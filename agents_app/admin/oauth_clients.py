"""Connected MCP clients: each person's OAuth connections to ``/mcp`` (docs/mcp.md, "Signing in
with OAuth"), with Revoke. A person sees their own; a superuser sees everyone's. Token hashes
are never shown; nothing is added or edited here (a connection is made by consenting)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents_app.models import OAuthToken
from agents_app.services.access.oauth_server import oauth_token_revoke


@admin.register(OAuthToken)
class ConnectedMcpClientAdmin(admin.ModelAdmin):
    empty_help = (
        "No MCP client is connected to your account. An MCP client (a desktop assistant, an "
        "IDE) connects by signing you in at /mcp and asking for your consent; it then appears "
        "here, where you can revoke it."
    )

    list_display = ("client", "user", "issued_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    list_select_related = ("client", "user")
    fields = ("client", "user", "scope", "issued_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[OAuthToken]:
        rows = super().get_queryset(request)
        return rows if request.user.is_superuser else rows.filter(user=request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke the selected connections")
    def revoke(self, request: HttpRequest, queryset: QuerySet[OAuthToken]) -> None:
        active = list(self.get_queryset(request).filter(pk__in=queryset, revoked_at__isnull=True))
        for token in active:
            oauth_token_revoke(token=token)
        self.message_user(request, f"Revoked {len(active)} connection(s).", messages.SUCCESS)
