"""Agents: general settings, side A, side B, "as a tool", and the agent's env values."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from agents_app.admin.agent_connect import AgentConnectMixin
from agents_app.admin.agent_structure import AgentStructureMixin
from agents_app.admin.env import AgentEnvValueInline, EnvOwnerAdminMixin
from agents_app.admin.versions import VersionedAdmin
from agents_app.forms import AgentForm
from agents_app.forms.agents import SIDE_FIELDS
from agents_app.forms.fields import rendered_as_one_page
from agents_app.models import Agent, PromptTool
from agents_app.pages.agent_structure import parent_hooks_in_words
from agents_app.pages.variable_scan import agent_env_levels


def _side(side: str) -> tuple[str, ...]:
    return tuple(f"side_{side}_{f}" for f in SIDE_FIELDS)


@admin.register(Agent)
class AgentAdmin(
    AgentConnectMixin, AgentStructureMixin, VersionedAdmin, EnvOwnerAdminMixin, admin.ModelAdmin
):
    version_kind = "agents"
    form = AgentForm
    inlines = [AgentEnvValueInline]
    # Adds the "Try this agent" chat panel (the chat page, embedded) under the form.
    change_form_template = "admin/agents_app/agent/editor.html"

    class Media:
        # Side B shown only when an AI takes it; each side's subagent rows (add-row, spec).
        js = ("studio/agent_editor.js", "studio/side_subagents.js")
        css = {"all": ("studio/side_subagents.css",)}

    def change_context(self, request: HttpRequest, obj: Agent) -> dict[str, Any]:
        # The read-only "Env values this agent needs" panel (names and levels, never values).
        return {**super().change_context(request, obj), "env_needs": agent_env_levels(obj)}

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # The side fields' suggestions (four of them) are one reading of the names.
        return rendered_as_one_page(
            lambda: super(AgentAdmin, self).changeform_view(
                request, object_id, form_url, extra_context
            )
        )

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> HttpResponse:
        # Stop tools are picked from the tools the side's prompt really has (agent_editor.js).
        context["side_prompt_tools"] = side_prompt_tools()
        return super().render_change_form(request, context, *args, **kwargs)

    list_display = (
        "name",
        "title",
        "type",
        "state",
        "side_a_prompt",
        "side_b_prompt",
        "expose_as_tool",
        "updated_at",
        "structure_link",  # the Structure page (agents_app/admin/agent_structure.py)
    )
    list_filter = ("state", "type", "expose_as_tool", "audience_groups")
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
                    "human_side",
                    "spec_version",
                    "description",
                    "icon",
                    "tags",
                    "max_session_turns",
                )
            },
        ),
        (
            "Publishing",
            {
                "description": "Who is offered this agent in the chat, the API's agent list "
                "and /mcp.",
                "fields": ("state", "audience_groups", "primary"),
            },
        ),
        (
            "Side A",
            {
                "description": "The AI side (or the person, when The person is side A). A turn "
                "of side A ends at the first stop condition "
                "met: a text answer (when Stop on response is ticked), the stop tool, or max "
                "steps. The end session tool ends the whole session.",
                "fields": _side("a"),
            },
        ),
        (
            "Side B (dual_ai only)",
            {
                "description": "Only used when Type is AI ↔ AI (the second AI, which side A "
                "talks to) or when the person is side A (the AI). Its stop conditions work "
                "like side A's.",
                "fields": _side("b"),
            },
        ),
        ("As a tool", {"fields": ("expose_as_tool", "tool_description", "parent_hooks_shown")}),
        ("In the chat", {"fields": ("tool_activity", "feedback_reasons")}),
        ("Automation", {"fields": ("mid_run_messages",)}),
        ("Advanced", {"classes": ("collapse",), "fields": ("hooks",)}),
    ]

    # Spec 0.2.0 ``parentHooks`` come from files and the API; the studio shows them, in words.
    readonly_fields = ("parent_hooks_shown",)

    @admin.display(description="Hooks required on its parents (parentHooks)")
    def parent_hooks_shown(self, obj: Agent) -> str:
        return parent_hooks_in_words(obj.parent_hooks) if obj.pk else ""


def side_prompt_tools() -> dict[str, list[str]]:
    """Each prompt's tool names, keyed by the prompt's id as the side's select sends it."""
    tools: dict[str, list[str]] = {}
    for prompt_id, name in PromptTool.objects.order_by("prompt_id", "position").values_list(
        "prompt_id", "name"
    ):
        tools.setdefault(str(prompt_id), []).append(name)
    return tools
