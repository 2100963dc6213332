"""Everything the thread inspector page shows about one thread, bounded and redacted.

Stored rows are already redacted by the engine; every text here also passes through the
thread's redactor (``services.env.redaction``) as a second line of defence, since a secret
changed after a message was stored would otherwise still be in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from agents_app import selectors
from agents_app.models import (
    EnvValue,
    Log,
    Message,
    ScheduledEffect,
    Thread,
    ThreadFile,
    ThreadSession,
    ThreadValue,
)
from agents_app.services.env.redaction import thread_redactor
from agents_app.services.sessions import tool_waits
from agents_app.services.sessions.lifecycle import active_session
from runtime.knowledge.retrieval import RETRIEVAL_LOG

MAX_MESSAGES = 200
MAX_LOGS = 50
MAX_ROWS = 100


@dataclass(frozen=True)
class MessageView:
    message: Message
    content: str
    tool_calls: list[dict[str, Any]]
    indent: int
    attachments: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class LogView:
    log: Log
    request: str
    response: str
    error: str
    # A ``knowledge retrieval`` log: the passages found before the turn, with their scores and
    # whether they fit the budget (runtime/step/knowledge_context.py).
    retrieved: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Inspection:
    messages: list[MessageView]
    messages_total: int
    logs: list[LogView]
    logs_total: int
    cost: dict[str, Any]
    effects: list[ScheduledEffect]
    values: list[tuple[ThreadValue, str]]
    files: list[ThreadFile]
    env: list[EnvValue]
    session: ThreadSession | None
    # Tool calls waiting for approval or the client (services.sessions.tool_waits), arguments redacted.
    pending_calls: list[dict[str, Any]] = field(default_factory=list)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) if value is not None else ""


def _tool_calls(message: Message, redact: Any) -> list[dict[str, Any]]:
    calls = []
    for call in message.tool_calls or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            calls.append({"name": fn.get("name", "?"), "arguments": redact(fn.get("arguments"))})
    return calls


def _attachments(thread: Thread, message: Message) -> list[dict[str, Any]]:
    """The message's files with the URL the studio shows them from (images as thumbnails)."""
    out = []
    for ref in message.attachments or []:
        if not isinstance(ref, dict) or not ref.get("path"):
            continue
        path = "/".join(quote(p) for p in str(ref["path"]).split("/") if p)
        mime = str(ref.get("mimeType") or "")
        out.append(
            {
                "name": ref.get("name") or ref["path"],
                "url": f"/api/threads/{thread.pk}/fs/{path}",
                "is_image": mime.startswith("image/") and mime != "image/svg+xml",
                "generated": bool(ref.get("generated")),
                "size": ref.get("size"),
            }
        )
    return out


def _newest(queryset: Any, limit: int) -> list[Any]:
    """The newest ``limit`` rows, oldest first (how a conversation reads)."""
    return list(reversed(queryset.order_by("-created_at")[:limit]))


def _retrieved(log: Log) -> list[dict[str, Any]]:
    if log.tool_name != RETRIEVAL_LOG or not isinstance(log.response_body, dict):
        return []
    passages = log.response_body.get("passages")
    return [p for p in passages if isinstance(p, dict)] if isinstance(passages, list) else []


def thread_inspection(thread: Thread) -> Inspection:
    redactor = thread_redactor(str(thread.pk))
    messages = _newest(Message.objects.filter(thread=thread), MAX_MESSAGES)
    logs = _newest(Log.objects.filter(thread=thread), MAX_LOGS)
    values = list(ThreadValue.objects.filter(thread=thread).order_by("key")[:MAX_ROWS])
    return Inspection(
        messages=[
            MessageView(
                m,
                redactor.text(m.content or ""),
                _tool_calls(m, lambda v: redactor.text(v if isinstance(v, str) else _json(v))),
                min(m.depth, 6),
                _attachments(thread, m),
            )
            for m in messages
        ],
        messages_total=Message.objects.filter(thread=thread).count(),
        logs=[
            LogView(
                log,
                redactor.text(_json(log.request_body)),
                redactor.text(_json(log.response_body)),
                redactor.text(log.error),
                _retrieved(log),
            )
            for log in reversed(logs)  # newest first: the latest request is what people look for
        ],
        logs_total=Log.objects.filter(thread=thread).count(),
        cost=selectors.thread_cost(thread),
        effects=list(ScheduledEffect.objects.filter(thread=thread).order_by("-due_at")[:MAX_ROWS]),
        values=[(v, redactor.text(_json(v.value))) for v in values],
        files=list(ThreadFile.objects.filter(thread=thread).order_by("path")[:MAX_ROWS]),
        env=list(
            EnvValue.objects.filter(scope=EnvValue.Scope.THREAD, thread=thread)
            .select_related("updated_by")
            .order_by("key")
        ),
        session=active_session(thread),
        pending_calls=[
            {**call, "args": redactor.text(_json(call["args"]))}
            for call in tool_waits.pending_calls(thread)
        ],
    )
