"""Firing an inbound trigger: check, render, then start a thread with the message (the
orchestration: thread creation runs the agent's hooks; ``services.triggers`` decides)."""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone

from agents_app.errors import Invalid
from agents_app.models import Trigger
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services import limits, triggers
from agents_app.services import messages as message_service


def fire(token: str, headers: Any, body: bytes) -> dict[str, Any]:
    """Start a thread from a trigger request; ``{threadId, messageId}`` (202)."""
    row = triggers.trigger_for_token(token)
    triggers.verify_sender(row, headers, body)
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise Invalid("The body must be JSON") from None
    content = triggers.render(row.template, data)
    # The owner's usage limits count trigger requests as their own thread and post.
    for action in ("thread_create", "message_post"):
        limits.action_hit(action, user=row.owner)
    thread = thread_create(user=row.owner, agent_name=row.agent.name, tags=["trigger"])
    posted = message_service.message_post(thread=thread, role="user", content=content)
    Trigger.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return {"threadId": str(thread.pk), "messageId": posted.message_id}
