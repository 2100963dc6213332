"""What the chat page's template needs from the request (the rest comes from the API)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def chat_context(request: HttpRequest, thread_id: str) -> dict[str, Any]:
    """The page's boot values: which thread or agent to open and whether to hide the chrome."""
    return {
        "thread_id": thread_id,
        "agent_name": request.GET.get("agent", "")[:200],
        "embed": request.GET.get("embed") == "1",
        "is_staff": bool(getattr(request.user, "is_staff", False)),
        # "Your chats" asks for this user's threads only (staff may list everyone's).
        "user_id": request.user.pk,
        # A failed reply links to its log for those who may open it in the studio.
        "can_view_logs": bool(
            getattr(request.user, "is_staff", False)
            and request.user.has_perm("agents_app.view_log")
        ),
    }
