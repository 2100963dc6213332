"""The live thread inspector: one studio page per thread (``admin:agents_app_thread_inspect``).

The page is a shell that ``static/studio/inspector/`` fills in: the conversation and the
request logs come from the public API and its two sockets (the chat page's own code), the
side panels and a log's detail from the two JSON views here, which answer only to staff
with the view permission on threads (the admin site's login and permissions). Acting
(stop, continue, approve, effects) goes through ``thread_actions`` (change permission).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from agents_app.base.errors import DomainError
from agents_app.models import Thread
from agents_app.pages.inspector_panels import inspector_panels
from agents_app.pages.log_inspector import log_inspection

NO_VIEW = "You do not have permission to look at threads."


class ThreadLiveInspectorMixin:
    """Adds the inspector page and its JSON views to the thread ModelAdmin."""

    admin_site: Any
    has_view_permission: Callable[..., bool]
    can_act: Callable[[HttpRequest], bool]

    def _guarded(self, view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @require_GET
        def guarded(request: HttpRequest, object_id: str, **kwargs: Any) -> HttpResponse:
            if not self.has_view_permission(request):
                if request.path.endswith(".json") or "/logs/" in request.path:
                    return JsonResponse({"error": NO_VIEW}, status=403)
                return HttpResponse(NO_VIEW, status=403, content_type="text/plain")
            thread = get_object_or_404(Thread.objects.select_related("agent"), pk=object_id)
            return view(request, thread, **kwargs)

        return self.admin_site.admin_view(guarded)  # type: ignore[no-any-return]

    def inspect_view(self, request: HttpRequest, thread: Thread) -> HttpResponse:
        can_act = self.can_act(request)
        pk = str(thread.pk)
        boot = {
            "threadId": pk,
            "canAct": can_act,
            "dual": thread.agent.type == "dual_ai",
            "panelsUrl": reverse("admin:agents_app_thread_panels", args=[pk]),
            "logUrl": reverse(
                "admin:agents_app_thread_log", args=[pk, "00000000-0000-0000-0000-000000000000"]
            ),
            "inspectUrl": reverse("admin:agents_app_thread_inspect", args=[pk]),
            "actions": {
                "stop": reverse("admin:agents_app_thread_stop", args=[pk]),
                "continue": reverse("admin:agents_app_thread_continue", args=[pk]),
                "decide": reverse("admin:agents_app_thread_tool_decide", args=[pk]),
                "effects": reverse("admin:agents_app_thread_changelist") + f"{pk}/effects/",
            },
        }
        title = thread.display_name or thread.agent.title or thread.agent.name
        context = {
            **self.admin_site.each_context(request),
            "title": f"Live: {title}",
            # The page needs the width: the admin's model list stays behind "Home".
            "is_nav_sidebar_enabled": False,
            "thread": thread,
            "opts": Thread._meta,
            "can_act": can_act,
            "boot": boot,
            "record_url": reverse("admin:agents_app_thread_change", args=[pk]),
            "chat_url": reverse("chat-thread", args=[pk]),
            "parent_url": reverse("admin:agents_app_thread_inspect", args=[thread.parent_id])
            if thread.parent_id
            else None,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/agents_app/thread/live.html", context)

    def panels_view(self, request: HttpRequest, thread: Thread) -> HttpResponse:
        return JsonResponse(inspector_panels(thread))

    def log_view(self, request: HttpRequest, thread: Thread, log_id: str) -> HttpResponse:
        try:
            detail = log_inspection(thread, str(log_id), request.GET.get("view") or None)
        except DomainError as exc:
            return JsonResponse({"error": exc.message}, status=exc.status)
        return JsonResponse(detail)

    def get_urls(self) -> list[Any]:
        urls: list[URLPattern] = [
            path(
                "<uuid:object_id>/inspect/",
                ensure_csrf_cookie(self._guarded(self.inspect_view)),
                name="agents_app_thread_inspect",
            ),
            path(
                "<uuid:object_id>/inspect/panels.json",
                self._guarded(self.panels_view),
                name="agents_app_thread_panels",
            ),
            path(
                "<uuid:object_id>/inspect/logs/<uuid:log_id>/",
                self._guarded(self.log_view),
                name="agents_app_thread_log",
            ),
        ]
        return [*urls, *super().get_urls()]  # type: ignore[misc]
