"""The agent's Structure page: a drawing of what it can reach (``pages.agent_structure``).

The service builds the tree as plain data; this module only resolves each node's link to
the editor it names and renders ``admin/agents_app/agent/structure.html``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from agents_app.models import Agent
from agents_app.pages.agent_structure import Node, Ref, agent_structure

_CHANGE_PAGES = {
    "agent": "admin:agents_app_agent_change",
    "prompt": "admin:agents_app_prompt_change",
    "model": "admin:agents_app_languagemodel_change",
    "mcp_server": "admin:agents_app_mcpserver_change",
}


def ref_url(ref: Ref | None, agent: Agent) -> str:
    if ref is None:
        return ""
    if ref.kind in _CHANGE_PAGES and ref.pk is not None:
        return reverse(_CHANGE_PAGES[ref.kind], args=[ref.pk])
    if ref.kind == "catalog":
        return reverse("admin:studio_catalog") + f"#{ref.anchor}"
    if ref.kind == "env":
        return reverse("admin:agents_app_agent_change", args=[agent.pk]) + "#env-needs"
    return ""


def _view_node(node: Node, agent: Agent) -> dict[str, Any]:
    return {
        "kind": node.kind,
        "name": node.name,
        "label": node.label,
        "detail": node.detail,
        "url": ref_url(node.ref, agent),
        "warnings": node.warnings,
        "notes": node.notes,
        "repeat": node.repeat,
        "children": [_view_node(child, agent) for child in node.children],
    }


class AgentStructureMixin:
    """Adds ``<id>/structure/`` to the agent admin, and a "Structure" column to its list."""

    admin_site: Any

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<path:object_id>/structure/",
                self.admin_site.admin_view(self.structure_view),
                name="agents_app_agent_structure",
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def structure_link(self, obj: Agent) -> str:
        url = reverse("admin:agents_app_agent_structure", args=[obj.pk])
        return format_html('<a href="{}">Structure</a>', url)

    structure_link.short_description = "Structure"  # type: ignore[attr-defined]

    def structure_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        agent = Agent.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        if agent is None:
            raise Http404("No agent with this id.")
        structure = agent_structure(agent)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Structure of {agent.title or agent.name}",
            "subtitle": None,
            "opts": Agent._meta,
            "original": agent,
            "tree": _view_node(structure.root, agent),
            "warning_count": structure.warning_count,
        }
        return TemplateResponse(request, "admin/agents_app/agent/structure.html", context)
