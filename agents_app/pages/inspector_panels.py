"""The side panels of the studio's live thread inspector, as JSON for its script.

The session's state (running, parked on a tool call, stopped, idle), the calls waiting
for a decision, files, key-value values, scheduled effects and the subagent tree, each
bounded. The page asks for them again when a frame says one changed (``kv_data``,
``stopped``, a file or effect event), so they stay live without a socket of their own.
Every text a user or a model wrote passes the thread's redactor.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from django.utils import timezone

from agents_app import selectors
from agents_app.base.people_format import ago_text, usd
from agents_app.models import ScheduledEffect, Thread, ThreadFile, ThreadSession, ThreadValue
from agents_app.services.env.redaction import thread_redactor
from agents_app.services.sessions import tool_waits
from agents_app.services.sessions.lifecycle import active_session, parked_session

MAX_ROWS = 100
# An effect's status as a person says it (the model's choice labels are developer words).
EFFECT_WORDS = {
    "pending": "Waiting",
    "processing": "Running",
    "completed": "Done",
    "failed": "Failed",
    "agent_canceled": "Canceled by the agent",
    "user_canceled": "Canceled by a person",
}
MAX_CHILDREN = 200
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml")
# Images a browser shows in <img> without running anything (SVG can carry script).
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _when(value: datetime | None, now: datetime) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"iso": value.isoformat(), "text": ago_text(value, now)}


def session_state(thread: Thread) -> dict[str, Any]:
    """What the thread is doing, in words, with what may be done about it."""
    session = active_session(thread)
    parked = parked_session(thread)
    if parked is not None and session is None:
        kind, label = "parked", "Waiting for a decision on a tool call"
        session = parked
    elif session is not None:
        queued = session.status == ThreadSession.Status.QUEUED
        kind, label = "running", "Waiting for a worker" if queued else "Running"
    elif thread.terminated_at is not None:
        kind, label = "terminated", "Terminated"
    elif thread.stopped:
        kind, label = "stopped", "Stopped by a person"
    else:
        kind, label = "idle", "Idle: waiting for a message"
    return {
        "kind": kind,
        "label": label,
        "session": {"id": str(session.pk), "status": session.status, "side": session.side}
        if session
        else None,
        "can_stop": kind in ("running", "parked"),
        # Continue resumes a stopped thread; an idle one only when two AIs take turns (as in
        # the chat page), otherwise a message is what starts the next session.
        "can_continue": kind == "stopped" or (kind == "idle" and thread.agent.type == "dual_ai"),
    }


def _file(thread: Thread, row: ThreadFile) -> dict[str, Any]:
    path = "/".join(quote(p) for p in row.path.split("/") if p)
    mime = row.mime_type or ""
    return {
        "path": row.path,
        "name": row.name,
        "mime_type": mime,
        "size": row.size,
        "is_dir": row.is_directory,
        # The API route serves user files inert (sandbox CSP, nosniff, attachment for HTML).
        "url": f"/api/threads/{thread.pk}/fs/{path}",
        "preview": "image"
        if mime in IMAGE_TYPES
        else "text"
        if mime.startswith(TEXT_TYPES)
        else None,
    }


def _effect(row: ScheduledEffect, now: datetime) -> dict[str, Any]:
    pending = row.status == ScheduledEffect.Status.PENDING
    return {
        "id": str(row.pk),
        "name": row.name,
        "status": row.status,
        "status_label": EFFECT_WORDS.get(row.status, row.get_status_display()),
        "due": _when(row.due_at, now),
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "error": row.error or None,
        "can_cancel": pending,
        "can_run": row.status != ScheduledEffect.Status.PROCESSING,
        "run_label": "Run now" if pending else "Run again",
    }


def subagent_tree(thread: Thread) -> list[dict[str, Any]]:
    """The thread's subagents and theirs, each with its status (at most ``MAX_CHILDREN``)."""
    ids = selectors.thread_subtree(thread)[1 : MAX_CHILDREN + 1]
    rows = Thread.objects.filter(pk__in=ids).select_related("agent")
    running = set(
        ThreadSession.objects.filter(thread_id__in=ids, status__in=selectors.ACTIVE_SESSION)
        .values_list("thread_id", flat=True)
        .distinct()
    )
    nodes: dict[Any, dict[str, Any]] = {}
    for row in rows:
        nodes[row.pk] = {
            "id": str(row.pk),
            "parent": row.parent_id,
            "name": row.display_name or row.relationship or row.agent.name,
            "agent": row.agent.title or row.agent.name,
            "status": "running" if row.pk in running else (row.child_status or "idle"),
            "stopped": row.stopped,
            "children": [],
        }
    roots: list[dict[str, Any]] = []
    for node_id in ids:
        node = nodes.get(node_id)
        if node is None:
            continue
        parent = nodes.get(node.pop("parent"))
        (parent["children"] if parent else roots).append(node)
    return roots


def inspector_panels(thread: Thread) -> dict[str, Any]:
    """Everything the inspector's tabs and state bar show, JSON-ready."""
    redactor = thread_redactor(str(thread.pk))
    now = timezone.now()
    values = ThreadValue.objects.filter(thread=thread).order_by("key")[:MAX_ROWS]
    files = ThreadFile.objects.filter(thread=thread).order_by("path")[:MAX_ROWS]
    effects = ScheduledEffect.objects.filter(thread=thread).order_by("-due_at")[:MAX_ROWS]
    cost = selectors.thread_cost(thread)
    return {
        "state": session_state(thread),
        "pending": [
            {**call, "args": redactor.text(_json(call["args"]))}
            for call in tool_waits.pending_calls(thread)
        ],
        "files": [_file(thread, f) for f in files],
        "values": [
            {
                "key": v.key,
                "value": redactor.text(_json(v.value)),
                "updated": _when(datetime.fromtimestamp(v.updated_at / 1_000_000, tz=UTC), now),
            }
            for v in values
        ],
        "effects": [_effect(e, now) for e in effects],
        "subagents": subagent_tree(thread),
        "cost": {
            "total": usd(cost["totalCost"]),
            "requests": cost["requestCount"],
            "models": [
                {
                    "name": b["modelName"],
                    "total": usd(b["totalCost"]),
                    "requests": b["requestCount"],
                }
                for b in cost["modelBreakdown"]
            ],
        },
    }
