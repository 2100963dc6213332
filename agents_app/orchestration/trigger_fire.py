"""Firing an inbound trigger: check, render, then start a thread with the message (the
orchestration: thread creation runs the agent's hooks; ``services.automation.triggers`` decides)."""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from agents_app.models import Trigger
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.automation import owner_rights, triggers
from agents_app.services.threads import messages as message_service

logger = logging.getLogger("agents_app.triggers")


def fire(token: str, headers: Any, body: bytes) -> dict[str, Any]:
    """Start a thread from a trigger request; ``{threadId, messageId}`` (202)."""
    row = triggers.trigger_for_token(token)
    triggers.verify_sender(row, headers, body)
    content = triggers.message_from_request(row, headers.get("Content-Type"), body)
    # The owner as they are now (active, offered the agent); their usage limits count
    # trigger requests as their own thread and post.
    try:
        owner_rights.act_as_owner(
            "The trigger", row.owner, row.agent, counts=("thread_create", "message_post")
        )
    except owner_rights.OwnerRefused as exc:
        # The sender is outside: it learns that the trigger may not act, not whose account
        # or which agent changed (the owner sees the reason in the studio's log).
        logger.info("trigger %s refused: %s", row.token_prefix, exc.message)
        raise owner_rights.OwnerRefused(
            "This trigger may not start a thread now: its owner's rights changed."
        ) from None
    thread = thread_create(user=row.owner, agent_name=row.agent.name, tags=["trigger"])
    posted = message_service.message_post(thread=thread, role="user", content=content)
    Trigger.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return {"threadId": str(thread.pk), "messageId": posted.message_id}
