"""Studio pages that belong to no single model: the dashboard context and the code catalog.

``studio.admin_site.StudioAdminSite`` mounts these (``get_urls``, ``index``); the data
comes from plain functions (``pages.dashboard``, the code registry).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from django.contrib.admin import AdminSite
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, URLPattern, path, reverse

from agents_app.admin.dashboard_charts import charts_context
from agents_app.base.code_registry import get_registry
from agents_app.pages.attention import needs_attention, shortcuts
from agents_app.pages.dashboard import dashboard_summary
from agents_app.services.threads import feedback

CATALOG_SECTIONS = (
    ("tools", "Tools", "Code tools a prompt can offer the model. Add one to a prompt by name."),
    ("hooks", "Hooks", "Code that runs at fixed moments of a session (list them on a prompt "
     "or an agent, under Advanced)."),
    ("effects", "Effects", "Work a tool or hook schedules to run later, outside the "
     "conversation (reminders, follow-ups)."),
    ("endpoints", "Thread endpoints", "Extra HTTP routes under /api/threads/<id>/ that "
     "code defines."),
)  # fmt: skip


# The models the dashboard's first screen links to (shortcuts and attention items).
LINKED = (
    "agent", "prompt", "languagemodel", "envvalue", "schedule", "trigger",
    "webhooksubscription", "evaldataset", "mcpserver", "thread", "threadsession",
    "spendbudget", "scheduledeffect",
)  # fmt: skip


def admin_links(request: HttpRequest) -> dict[str, str]:
    """``key`` → changelist, ``key_add`` → add form (with the right), ``key_change`` → change
    page with ``{pk}``, for the models this person may view."""
    user = request.user
    url: dict[str, str] = {}
    for key in LINKED:
        if not user.has_perm(f"agents_app.view_{key}"):
            continue
        url[key] = reverse(f"admin:agents_app_{key}_changelist")
        url[f"{key}_change"] = reverse(f"admin:agents_app_{key}_change", args=["00000000"]).replace(
            "00000000", "{pk}"
        )
        if user.has_perm(f"agents_app.add_{key}"):
            with contextlib.suppress(NoReverseMatch):  # a read-only list: no add form
                url[f"{key}_add"] = reverse(f"admin:agents_app_{key}_add")
    return url


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    url = admin_links(request)
    context = {
        "dashboard": dashboard_summary(),
        "charts": charts_context(request),
        "shortcuts": shortcuts(url),
        "attention": needs_attention(url),
    }
    if request.user.has_perm("agents_app.view_feedback"):
        context["by_version"] = feedback.summary_by_version()
    return context


def _pretty(schema: Any) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False)


def catalog_sections() -> list[dict[str, Any]]:
    """The registry's catalog grouped for the page, each schema pretty-printed."""
    catalog = get_registry().catalog()
    sections = []
    for key, title, intro in CATALOG_SECTIONS:
        items = [
            {**item, "schema_text": _pretty(item["args_schema"])} if "args_schema" in item else item
            for item in sorted(catalog.get(key, []), key=lambda i: str(i["name"]))
        ]
        sections.append({"key": key, "title": title, "intro": intro, "items": items})
    return sections


def catalog_view(site: AdminSite, request: HttpRequest) -> HttpResponse:
    context = {
        **site.each_context(request),
        "title": "Code catalog",
        "subtitle": None,
        "sections": catalog_sections(),
    }
    return TemplateResponse(request, "admin/studio/catalog.html", context)


def studio_urls(site: AdminSite) -> list[URLPattern]:
    return [
        path(
            "catalog/",
            site.admin_view(lambda request: catalog_view(site, request)),
            name="studio_catalog",
        ),
    ]
