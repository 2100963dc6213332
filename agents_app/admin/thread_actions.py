"""The thread inspector's buttons: stop, continue, cancel or run an effect now, and
approve or reject a tool call that waits.

Each is a POST to a small view that calls the same service as the API
(``services.sessions.lifecycle``, ``services.sessions.effects``, ``services.sessions.tool_waits``). A form post gets
the outcome as an admin message and returns to the thread page; the live inspector's
script asks with ``Accept: application/json`` and gets ``{"message"}`` or ``{"error"}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from agents_app.base.errors import DomainError
from agents_app.models import ScheduledEffect, Thread
from agents_app.orchestration.effect_runner import effect_run
from agents_app.services.sessions import tool_waits
from agents_app.services.sessions.effects import effect_cancel
from agents_app.services.sessions.lifecycle import thread_continue, thread_stop

ThreadAction = Callable[[HttpRequest, Thread], str]


def _stop(request: HttpRequest, thread: Thread) -> str:
    thread_stop(thread=thread)
    return "Stop requested: a running session stops at its next safe point."


def _continue(request: HttpRequest, thread: Thread) -> str:
    side = "b" if request.POST.get("side") == "b" else "a"
    session = thread_continue(thread=thread, side=side)
    return "Continued: a session is running." if session else "Continued."


def _effect(thread: Thread, effect_id: str) -> ScheduledEffect:
    return get_object_or_404(ScheduledEffect, pk=effect_id, thread=thread)


def _cancel_effect(request: HttpRequest, thread: Thread, effect_id: str) -> str:
    effect = _effect(thread, effect_id)
    effect_cancel(effect=effect, by="user")
    return f"Canceled the effect {effect.name}."


def _run_effect(request: HttpRequest, thread: Thread, effect_id: str) -> str:
    result = effect_run(effect=_effect(thread, effect_id), owner="admin")
    detail = f" ({result['error']})" if result.get("error") else ""
    verb = "Replayed" if result["action"] == "replayed" else "Ran"
    return f"{verb} the effect: {result['status']}{detail}."


def _decide(request: HttpRequest, thread: Thread) -> str:
    body = {
        "tool_call_id": request.POST.get("tool_call_id", ""),
        "approve": request.POST.get("approve") == "true",
        "reason": request.POST.get("reason") or None,
    }
    call_id, decision = tool_waits.decision_from_body(body)
    tool_waits.tool_call_decide(thread, call_id, decision)
    verb = "Approved" if body["approve"] else "Rejected"
    return f"{verb} the tool call; the session continues."


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


class ThreadActionsMixin:
    """Adds the action URLs to a thread ModelAdmin (``admin:agents_app_thread_<action>``)."""

    admin_site: Any

    def can_act(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("agents_app.change_thread"))

    def _wrap(self, action: Callable[..., str]) -> Callable[..., HttpResponse]:
        @require_POST
        def view(request: HttpRequest, object_id: str, **kwargs: Any) -> HttpResponse:
            thread = get_object_or_404(Thread, pk=object_id)
            back = reverse("admin:agents_app_thread_change", args=[thread.pk])
            as_json = _wants_json(request)
            if not self.can_act(request):
                refused = "You may look at threads but not act on them."
                if as_json:
                    return JsonResponse({"error": refused}, status=403)
                messages.error(request, refused)
                return HttpResponseRedirect(back)
            try:
                done = action(request, thread, **kwargs)
            except DomainError as exc:
                if as_json:
                    return JsonResponse({"error": exc.message}, status=exc.status)
                messages.warning(request, f"Not done: {exc.message}")
                return HttpResponseRedirect(back)
            if as_json:
                return JsonResponse({"message": done})
            messages.success(request, done)
            return HttpResponseRedirect(back)

        return self.admin_site.admin_view(view)  # type: ignore[no-any-return]

    def get_urls(self) -> list[Any]:
        actions = [
            path("<uuid:object_id>/stop/", self._wrap(_stop), name="agents_app_thread_stop"),
            path(
                "<uuid:object_id>/continue/",
                self._wrap(_continue),
                name="agents_app_thread_continue",
            ),
            path(
                "<uuid:object_id>/tool-calls/decide/",
                self._wrap(_decide),
                name="agents_app_thread_tool_decide",
            ),
            path(
                "<uuid:object_id>/effects/<uuid:effect_id>/cancel/",
                self._wrap(_cancel_effect),
                name="agents_app_thread_effect_cancel",
            ),
            path(
                "<uuid:object_id>/effects/<uuid:effect_id>/run/",
                self._wrap(_run_effect),
                name="agents_app_thread_effect_run",
            ),
        ]
        urls: list[URLPattern] = actions
        return [*urls, *super().get_urls()]  # type: ignore[misc]
