"""Remote A2A agents: the connection, its cached Agent Card, and "Fetch the card"."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from agents_app.forms.a2a_agents import A2aAgentForm
from agents_app.models import A2aAgent
from agents_app.services.definitions.mcp_servers import studio_env_lookup
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.doors.a2a_client import card_refresh
from runtime.mcp.servers import McpConfigError
from runtime.tools.a2a_tools import A2aUnavailable


@admin.register(A2aAgent)
class A2aAgentAdmin(admin.ModelAdmin):
    empty_help = (
        "No remote A2A agents yet. An A2A agent is another system's agent that yours can ask: "
        "add its card URL, then list it in a prompt's tools as a2a:NAME."
    )
    form = A2aAgentForm
    list_display = ("name", "url", "enabled", "card_fetched_at", "last_error")
    list_filter = ("enabled",)
    search_fields = ("name", "url", "description")
    readonly_fields = ("card_summary", "card_fetched_at", "last_error")
    actions = ["fetch_cards"]
    fieldsets = [
        (None, {"fields": ("name", "enabled", "url", "headers", "description", "timeout_ms")}),
        (
            "Agent Card",
            {
                "description": "What the remote agent said of itself at the last fetch (on "
                "first use, or with the “Fetch the card” action of the list).",
                "fields": ("card_summary", "card_fetched_at", "last_error"),
            },
        ),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Prompts name it (a2a:NAME), and a save is by name: a new name would be a new agent.
        fixed = ("name",) if obj is not None else ()
        return (*fixed, *self.readonly_fields)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        # modelform_factory builds a new class per request: the actor is this request's user.
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"actor": request.user})

    def save_model(self, request: HttpRequest, obj: A2aAgent, form: Any, change: bool) -> None:
        # The one save path: the same rules and writes as import and the other writers.
        assert form.definition is not None
        save_definitions([("studio", form.definition)], source="studio")
        obj.pk = A2aAgent.objects.get(name=form.definition.name).pk

    # A fetch writes the cached card and sends the headers' values: those who may change
    # remote agents, not those who may only view them.
    @admin.action(description="Fetch the card of the selected agents", permissions=["change"])
    def fetch_cards(self, request: HttpRequest, queryset: QuerySet[A2aAgent]) -> None:
        env = studio_env_lookup(request.user)
        for row in queryset:
            try:
                card = card_refresh(row=row, env=env)
            except (A2aUnavailable, McpConfigError) as exc:  # McpConfigError: an env value
                # this person may not read, refused in words by studio_env_lookup
                self.message_user(
                    request,
                    f"{row.name}: could not read the card: {str(exc).rstrip('.')}.",
                    messages.ERROR,
                )
            else:
                self.message_user(request, f"{row.name}: card of “{card.get('name')}” fetched.")

    @admin.display(description="Card")
    def card_summary(self, obj: A2aAgent) -> str:
        card = obj.card or {}
        if not card:
            return "Not fetched yet."
        skills = [s for s in card.get("skills") or [] if isinstance(s, dict)]
        rows = format_html_join(
            "",
            "<li><code>{}</code> {}</li>",
            ((s.get("id", ""), s.get("description", "")) for s in skills),
        )
        return format_html(
            "<p><strong>{}</strong>: {}</p><ul>{}</ul>",
            card.get("name", ""),
            card.get("description", ""),
            rows,
        )
