"""The agent's Connect page (``<id>/connect/``): each door's URLs and a snippet that calls
it, built by ``pages.agent_connect`` from the URL this page was asked on (docs/studio.md)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from agents_app.models import Agent
from agents_app.pages.agent_connect import KEY_VARIABLE, agent_doors


class AgentConnectMixin:
    """Adds ``<id>/connect/`` to the agent admin (linked from the editor's top buttons)."""

    admin_site: Any

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<path:object_id>/connect/",
                self.admin_site.admin_view(self.connect_view),
                name="agents_app_agent_connect",
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def connect_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        agent = Agent.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        if agent is None:
            raise Http404("No agent with this id.")
        base_url = request.build_absolute_uri("/").rstrip("/")
        context = {
            **self.admin_site.each_context(request),
            "title": f"Connect to {agent.title or agent.name}",
            "subtitle": None,
            "opts": Agent._meta,
            "original": agent,
            "doors": agent_doors(
                base_url=base_url, agent=agent.name, exposed_as_tool=agent.expose_as_tool
            ),
            "key_variable": KEY_VARIABLE,
            "published": agent.state == "published",
        }
        return TemplateResponse(request, "admin/agents_app/agent/connect.html", context)
