"""Agents: general settings, side A, side B, "as a tool", and the agent's env values."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from agents_app.admin.env import AgentEnvValueInline, EnvOwnerAdminMixin
from agents_app.admin.versions import VersionedAdmin
from agents_app.forms import AgentForm
from agents_app.forms.agents import SIDE_FIELDS
from agents_app.models import Agent
from agents_app.services.variable_scan import agent_env_levels


def _side(side: str) -> tuple[str, ...]:
    return tuple(f"side_{side}_{f}" for f in SIDE_FIELDS)


@admin.register(Agent)
class AgentAdmin(VersionedAdmin, EnvOwnerAdminMixin, admin.ModelAdmin):
    version_kind = "agents"
    form = AgentForm
    inlines = [AgentEnvValueInline]
    # Adds the "Try this agent" chat panel (the chat page, embedded) under the form.
    change_form_template = "admin/agents_app/agent/editor.html"

    class Media:
        js = ("studio/agent_editor.js",)  # shows Side B only for AI <-> AI agents

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # The read-only "Env values this agent needs" panel (names and levels, never values).
        agent = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if agent is not None:
            extra["env_needs"] = agent_env_levels(agent)
        return super().change_view(request, object_id, form_url, extra)

    list_display = (
        "name",
        "title",
        "type",
        "side_a_prompt",
        "side_b_prompt",
        "expose_as_tool",
        "updated_at",
    )
    list_filter = ("type", "expose_as_tool")
    search_fields = ("name", "title", "description")
    list_select_related = ("side_a_prompt", "side_b_prompt")
    fieldsets = [
        (
            "General",
            {
                "fields": (
                    "name",
                    "title",
                    "type",
                    "description",
                    "icon",
                    "tags",
                    "max_session_turns",
                )
            },
        ),
        (
            "Side A",
            {
                "description": "The AI side. A turn of side A ends at the first stop condition "
                "met: a text answer (when Stop on response is ticked), the stop tool, or max "
                "steps. The end session tool ends the whole session.",
                "fields": _side("a"),
            },
        ),
        (
            "Side B (dual_ai only)",
            {
                "description": "Only used when Type is AI ↔ AI: the second AI, which side A "
                "talks to. Its stop conditions work like side A's.",
                "fields": _side("b"),
            },
        ),
        ("As a tool", {"fields": ("expose_as_tool", "tool_description")}),
        ("Advanced", {"classes": ("collapse",), "fields": ("hooks",)}),
    ]
