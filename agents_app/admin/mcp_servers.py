"""MCP servers: the connection, its cached tools, and "Test connection" (lists the tools)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from agents_app.base.errors import Invalid
from agents_app.forms.mcp_servers import McpServerForm
from agents_app.models import McpOAuthGrant, McpServer
from agents_app.services.access.mcp_tokens import mcp_grant_revoke
from agents_app.services.definitions.mcp_servers import mcp_server_probe, mcp_server_refresh


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    empty_help = (
        "No MCP servers yet. An MCP server offers tools (search, tickets, files…) that your "
        "prompts can call: add its URL (or command), press Test connection to see its tools, "
        "then tick the ones a prompt may use on the prompt's page."
    )
    form = McpServerForm
    change_form_template = "admin/agents_app/mcpserver/change_form.html"
    list_display = ("name", "transport", "target", "enabled", "tool_count", "tools_refreshed_at")
    list_filter = ("transport", "enabled")
    search_fields = ("name", "url", "command")
    readonly_fields = ("tool_table", "tools_refreshed_at", "last_error")
    fieldsets = [
        (None, {"fields": ("name", "enabled", "transport", "timeout_ms", "allowed_tools")}),
        ("Streamable HTTP", {"fields": ("url", "headers")}),
        (
            "Sign-in (OAuth, each person's own account)",
            {"fields": ("auth", "oauth_client_id", "oauth_client_secret", "oauth_scope")},
        ),
        (
            "stdio (runs a command on the worker)",
            {"classes": ("collapse",), "fields": ("command", "args", "env")},
        ),
        (
            "Tools",
            {
                "description": "What the server listed at the last test of its connection. "
                "Prompts may list these as mcp:SERVER/TOOL.",
                "fields": ("tool_table", "tools_refreshed_at", "last_error"),
            },
        ),
    ]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        # modelform_factory builds a new class per request: the actor is this request's user.
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"actor": request.user})

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<path:object_id>/test/",
                self.admin_site.admin_view(self.test_connection),
                name="agents_app_mcpserver_test",
            ),
            *super().get_urls(),
        ]

    def test_connection(self, request: HttpRequest, object_id: str) -> HttpResponse:
        server = get_object_or_404(McpServer, pk=object_id)
        if request.method != "POST" or not self.has_change_permission(request, server):
            raise PermissionDenied
        if request.headers.get("Accept") == "application/json":
            return self._test_edits(request, server)
        try:
            tools = mcp_server_refresh(server=server, user=request.user)
        except Invalid as exc:
            self.message_user(request, str(exc), messages.ERROR)
        else:
            names = ", ".join(t.name for t in tools) or "none"
            self.message_user(
                request,
                f"Connected to '{server.name}': {len(tools)} tools ({names}).",
                messages.SUCCESS,
            )
        return HttpResponseRedirect(reverse("admin:agents_app_mcpserver_change", args=[server.pk]))

    def _test_edits(self, request: HttpRequest, server: McpServer) -> JsonResponse:
        """The form as it is on screen, unsaved, tested (static/studio/mcp_test.js); nothing
        is stored, so a failed test of an edit leaves the saved server as it was."""
        form = self.get_form(request, server, change=True)(request.POST, instance=server)
        if not form.is_valid():
            errors = "; ".join(
                f"{form.fields[f].label if f in form.fields else 'Form'}: {' '.join(e)}"
                for f, e in form.errors.items()
            )
            return JsonResponse({"ok": False, "text": f"Fix the form first: {errors}"})
        candidate = form.save(commit=False)
        try:
            tools = mcp_server_probe(server=candidate, user=request.user)
        except Invalid as exc:
            return JsonResponse({"ok": False, "text": str(exc)})
        names = ", ".join(t.name for t in tools) or "none"
        where = (
            candidate.url if candidate.transport == McpServer.Transport.HTTP else candidate.command
        )
        return JsonResponse(
            {
                "ok": True,
                "text": f"Connected to {where}: {len(tools)} tools ({names}). "
                "Save to keep these settings.",
            }
        )

    @admin.display(description="URL or command")
    def target(self, obj: McpServer) -> str:
        return obj.url if obj.transport == McpServer.Transport.HTTP else obj.command

    @admin.display(description="Tools")
    def tool_count(self, obj: McpServer) -> int:
        return len(obj.tools or [])

    @admin.display(description="Tools")
    def tool_table(self, obj: McpServer) -> str:
        if not obj.tools:
            return "Not listed yet: save, then press “Test connection”."
        allowed = set(obj.allowed_tools) if obj.allowed_tools is not None else None
        rows = format_html_join(
            "",
            "<tr><td><code>mcp:{}/{}</code></td><td>{}</td><td>{}</td></tr>",
            (
                (
                    obj.name,
                    t.get("name"),
                    t.get("description") or "",
                    "yes" if allowed is None or t.get("name") in allowed else "no (not allowed)",
                )
                for t in obj.tools
            ),
        )
        return format_html(
            '<table class="studio-mcp-tools"><thead><tr><th>Name in a prompt</th>'
            "<th>What it does</th><th>Offered</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )


@admin.register(McpOAuthGrant)
class McpOAuthGrantAdmin(admin.ModelAdmin):
    """People's connections to ``auth: oauth`` servers: staff see who is connected and may
    revoke (delete) a connection; the tokens themselves are never shown."""

    list_display = ("server", "user", "scope", "expires_at", "created_at", "updated_at")
    list_filter = ("server",)
    search_fields = ("user__username", "server__name")
    fields = ("server", "user", "scope", "expires_at", "created_at", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: McpOAuthGrant) -> None:
        mcp_grant_revoke(grant=obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for grant in queryset:
            mcp_grant_revoke(grant=grant)
