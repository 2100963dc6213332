"""The studio: a Django admin site branded for people who configure agents.

The index groups models by what people do with them (configure, watch activity,
manage people) instead of by Django app, in the order they are usually needed.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import URLPattern, URLResolver

# (section title, [(app_label, model_name), …]); models not listed keep their app's group.
SECTIONS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Configure",
        [
            ("agents_app", "agent"),
            ("agents_app", "prompt"),
            ("agents_app", "languagemodel"),
            ("agents_app", "mcpserver"),
            ("agents_app", "a2aagent"),
            ("agents_app", "knowledgebase"),
            ("agents_app", "envvalue"),
            ("agents_app", "credentialgrant"),
            ("agents_app", "retentionpolicy"),
        ],
    ),
    (
        "Activity",
        [
            ("agents_app", "thread"),
            ("agents_app", "log"),
            ("agents_app", "feedback"),
            ("agents_app", "evaldataset"),
            ("agents_app", "evalrun"),
            ("agents_app", "threadsession"),
            ("agents_app", "scheduledeffect"),
        ],
    ),
    (
        "Automation",
        [
            ("agents_app", "schedule"),
            ("agents_app", "trigger"),
            ("agents_app", "webhooksubscription"),
            ("agents_app", "webhookdelivery"),
        ],
    ),
    (
        "People and access",
        [
            ("auth", "user"),
            ("agents_app", "apikey"),
            ("agents_app", "oauthtoken"),
            ("agents_app", "mcpoauthgrant"),
            ("agents_app", "usagelimit"),
            ("agents_app", "spendbudget"),
            ("agents_app", "scimtoken"),
            ("agents_app", "auditevent"),
        ],
    ),
]
# Raw tables only developers need; shown to them last, as "System", and hidden from the
# people who configure agents (they reach the same rows from a thread's pages).
SYSTEM_SECTION = "System (for developers)"
SYSTEM_MODELS: list[tuple[str, str]] = [
    ("agents_app", "message"),
    ("agents_app", "queuedmessage"),
    ("agents_app", "threadvalue"),
    ("agents_app", "threadfile"),
    ("agents_app", "websocketticket"),
    ("agents_app", "evalresult"),
    ("agents_app", "knowledgedocument"),
    ("auth", "group"),
]
DEVELOPERS_GROUP = "Developers"


def is_developer(user: Any) -> bool:
    """Superusers and members of the "Developers" group see the studio's system chrome."""
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser:
        return True
    return bool(user.groups.filter(name=DEVELOPERS_GROUP).exists())


class StudioAdminSite(admin.AdminSite):
    site_header = "Standard Agents Studio"
    site_title = "Agents Studio"
    index_title = "Configure agents, prompts and models"

    # The dashboard and the code catalog live in agents_app.admin.site_views; imported
    # late because this class is loaded while the app registry is still being built.
    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        from agents_app.admin.site_views import dashboard_context

        return super().index(request, {**dashboard_context(request), **(extra_context or {})})

    # The sign-in form counts attempts like the API's login (agents_app.services.access.limits).
    @property
    def login_form(self) -> Any:  # type: ignore[override]
        from agents_app.forms.login import AdminLoginForm

        return AdminLoginForm

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        from agents_app.forms.login import mark_throttled

        return mark_throttled(super().login(request, extra_context))

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        context = super().each_context(request)
        developer = is_developer(request.user)
        context["is_developer"] = developer
        # "View site" leads nowhere a non-developer needs; the chat is linked instead.
        if not developer:
            context["site_url"] = None
        return context

    def get_urls(self) -> list[URLPattern | URLResolver]:
        from agents_app.admin.site_views import studio_urls

        return [*studio_urls(self), *super().get_urls()]

    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        apps = super().get_app_list(request, app_label)
        if app_label is not None:
            return apps
        by_key = {
            (app["app_label"], m["object_name"].lower()): (app, m)
            for app in apps
            for m in app["models"]
        }
        system = [by_key.pop(k) for k in SYSTEM_MODELS if k in by_key]
        sections = []
        for title, keys in SECTIONS:
            found = [by_key.pop(k) for k in keys if k in by_key]
            if found:
                first_app = found[0][0]
                sections.append({**first_app, "name": title, "models": [m for _, m in found]})
        # Anything registered later and not placed above stays in its own app's group.
        leftovers: dict[str, dict[str, Any]] = {}
        for app, model in by_key.values():
            leftovers.setdefault(app["app_label"], {**app, "models": []})["models"].append(model)
        groups = sections + list(leftovers.values())
        if system and is_developer(request.user):
            first_app = system[0][0]
            groups.append({**first_app, "name": SYSTEM_SECTION, "models": [m for _, m in system]})
        return groups
