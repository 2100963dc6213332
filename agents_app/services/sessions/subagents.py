"""Subagents on the database: waking threads that have queued messages, and the registry.

``DjangoHost`` is the engine's ``SubagentHost`` in production: ``wake`` requests a
session for a thread with queued messages unless one is active (the partial unique
constraint on ``ThreadSession`` keeps it to one), so a non-blocking child runs as its
own session in a worker, and a parent whose child delivered a result runs again.
A thread that is stopped or terminated is not woken: its queue waits for a user
message or a continue, as posted messages do.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import OuterRef, Subquery

from agents_app.models import QueuedMessage, Thread, ThreadSession
from agents_app.services.sessions import lifecycle as sessions
from agents_app.wire import micros


@transaction.atomic
def thread_wake(thread_id: str) -> str | None:
    """Request a session for the thread's queued messages; the new session's id, or ``None``."""
    locked = Thread.objects.select_for_update().filter(pk=thread_id).first()
    if locked is None or locked.stopped or locked.terminated_at is not None:
        return None
    first = QueuedMessage.objects.filter(thread=locked).order_by("created_at").first()
    if first is None:
        return None
    side = "b" if first.role == "assistant" else "a"
    row = sessions.session_request(locked, side=side, root_message_id=first.pk)
    return str(row.pk) if row is not None else None


class DjangoHost:
    """``runtime.delegation.subagents.SubagentHost`` over session rows and the executor."""

    async def wake(self, thread_id: str) -> None:
        await sync_to_async(thread_wake)(thread_id)


def subagent_registry(thread: Thread) -> list[dict[str, Any]]:
    """The parent's registry in the reference's shape (spec 0.2.0: ``owner``, the parent's side
    that owns the relationship, ``initialArguments``, and ``awaiting_human`` for a child whose
    last session parked for a person), plus ``name`` and ``createdAt`` (µs)."""
    last_stop = (
        ThreadSession.objects.filter(thread_id=OuterRef("pk"))
        .order_by("-created_at")
        .values("stop_reason")[:1]
    )
    children = (
        Thread.objects.select_related("agent")
        .filter(parent=thread)
        .annotate(last_stop=Subquery(last_stop))
        .order_by("created_at")
    )
    return [_entry(c) for c in children]


def _entry(c: Any) -> dict[str, Any]:
    link = c.subagent_config or {}
    status = c.child_status or "running"
    if status in ("running", "idle") and c.last_stop == "awaiting_human":
        status = "awaiting_human"
    return {
        "id": str(c.pk),
        "reference": str(c.pk),
        "relationship": c.relationship or c.agent.name,
        "agent_name": c.agent.name,
        "title": c.agent.title or c.agent.name,
        "name": c.display_name or c.agent.name,
        "threadName": c.display_name or None,
        "status": status,
        "owner": link.get("owner_side"),
        "initialArguments": link.get("arguments") or {},
        "blocking": link.get("blocking"),
        "resumable": link.get("resumable"),
        "createdAt": micros(c.created_at),
    }
