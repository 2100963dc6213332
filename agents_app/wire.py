"""The reference's JSON shapes for our rows, shared by the HTTP API and the WebSocket frames.

Timestamp units follow the reference wire format (documented in docs/api.md):
message and log times are integer microseconds (stored that way); thread times
are unix seconds; effect and file times are milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from agents_app.base.icons import configured_origin, icon_url
from agents_app.db import rows
from agents_app.models import (
    Agent,
    Log,
    Message,
    QueuedMessage,
    ScheduledEffect,
    Thread,
    ThreadFile,
)
from runtime.core.messages import Message as EngineMessage
from runtime.core.messages import to_wire
from runtime.store.events import provider_tools_called

# Keys a queued (not yet stored) message carries on the wire, as the reference does.
QUEUE_METADATA = ("queued", "queue_status", "queue_source", "queue_id")
# Ours: set on a queued row posted while the thread was stopped, so the next session
# runs even though the stop flag is set (a new user message resumes a stopped thread).
RESUME_MARK = "queue_source"
RESUME_VALUE = "alarm_queue"


def seconds(value: datetime | None) -> int | None:
    return int(value.timestamp()) if value is not None else None


def millis(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def micros(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1_000_000) if value is not None else None


def user_wire(user: Any) -> dict[str, Any]:
    """``{id, username, role}``; staff are the reference's ``admin`` role."""
    return {
        "id": str(user.pk),
        "username": user.get_username(),
        "role": "admin" if user.is_staff else "user",
        "email": getattr(user, "email", "") or None,
    }


# --- messages ------------------------------------------------------------------------


def message_wire(row: Message, child: Thread | None = None) -> dict[str, Any]:
    """One stored message; the same dict the engine puts in ``message_data`` frames."""
    return engine_message_wire(rows.engine_message(row), child)


def engine_message_wire(message: EngineMessage, child: Thread | None = None) -> dict[str, Any]:
    """``message_wire`` of a message already in the engine's shape (``page_reads``)."""
    data = to_wire(message)
    if child is not None:
        data.update(subagent_projection(child))
    return data


def subagent_projection(child: Thread) -> dict[str, Any]:
    config = child.subagent_config or {}
    return {
        "subagent_name": child.agent.name,
        "subagent_title": child.agent.title or child.agent.name,
        "subagent_description": child.agent.description or None,
        "subagent_status": child.child_status or "running",
        "subagent_relationship": child.relationship or child.agent.name,
        "subagent_blocking": config.get("blocking"),
        "subagent_thread_name": child.display_name or None,
        "subagent_spawn_group_id": config.get("spawn_group_id"),
    }


def queued_wire(row: QueuedMessage | dict[str, Any]) -> dict[str, Any]:
    """A queued message shown as the reference's synthetic ``pending`` row (``row``: the
    model, or the dict of its fields that ``page_reads.queued_rows`` gives)."""
    if not isinstance(row, dict):
        row = {
            "id": str(row.id),
            "role": row.role,
            "content": row.content,
            "silent": row.silent,
            "metadata": row.metadata,
            "attachments": row.attachments,
            "created_at": row.created_at,
        }
    metadata = dict(row["metadata"] or {})
    metadata.update(
        {
            "queued": True,
            "queue_status": "queued",
            "queue_source": metadata.get(RESUME_MARK) or "message_queue",
            "queue_id": row["id"],
        }
    )
    return {
        "id": row["id"],
        "role": row["role"],
        "content": row["content"],
        "name": None,
        "tool_calls": None,
        "tool_call_id": None,
        "tool_status": None,
        "status": "pending",
        "created_at": row["created_at"],
        "request_sent_at": None,
        "response_completed_at": None,
        "parent_id": None,
        "depth": 0,
        "silent": row["silent"],
        "metadata": metadata,
        "side": None,
        "attachments": row["attachments"] or [],
        "reasoning_content": None,
        "reasoning_details": None,
        "log_id": None,
        "prompt_name": None,
        "subagent_id": None,
    }


def thread_created(row: Thread) -> dict[str, Any]:
    """The answer to ``POST /api/threads`` (stored with its idempotency key, replayed as is)."""
    return {
        "threadId": str(row.pk),
        "agent_id": row.agent.name,
        "message": "Thread created successfully",
    }


def message_queued(message_id: Any) -> dict[str, Any]:
    """The 202 answer to a posted message (stored with its idempotency key, replayed as is)."""
    return {
        "status": "queued",
        "queueId": str(message_id),
        "messageId": str(message_id),
        "message": "Message queued for processing. Connect via WebSocket for real-time updates.",
    }


def message_frame(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message_data",
        "message_id": data["id"],
        "depth": data["depth"],
        "data": data,
    }


# --- threads -------------------------------------------------------------------------


def side_backings(agent: Agent) -> tuple[str, str]:
    return _backings(agent.type, agent.side_a_human, (agent.side_a_handler, agent.side_b_handler))


def _backings(
    kind: str, side_a_human: bool = False, handlers: tuple[str, str] = ("", "")
) -> tuple[str, str]:
    """Who is on each side: a prompt, a person (spec 0.2.0 may put the person on side A) or
    a handler (spec 0.2.0: code takes the side's turns)."""
    if side_a_human:
        a, b = "human", "prompt"
    else:
        a, b = "prompt", ("prompt" if kind == Agent.Type.DUAL_AI else "human")
    return ("handler" if handlers[0] else a), ("handler" if handlers[1] else b)


def agent_summary(agent: Agent, origin: str | None = None) -> dict[str, Any]:
    return _agent_summary(
        agent.name,
        agent.title,
        agent.type,
        agent.description,
        agent.icon,
        origin,
        agent.side_a_human,
        (agent.side_a_handler, agent.side_b_handler),
    )


def _agent_summary(
    name: str,
    title: str,
    kind: str,
    description: str,
    icon: str,
    origin: str | None,
    side_a_human: bool = False,
    handlers: tuple[str, str] = ("", ""),
) -> dict[str, Any]:
    a, b = _backings(kind, side_a_human, handlers)
    return {
        "name": name,
        "title": title or name,
        "side_a_backing": a,
        "side_b_backing": b,
        "description": description or None,
        "icon": icon_url(icon, origin),
    }


def thread_item(row: Thread, executing: bool, origin: str | None = None) -> dict[str, Any]:
    """A thread in ``GET /api/threads`` and in registry events."""
    agent = row.agent
    return thread_item_of_values(
        {
            "id": row.id,
            "owner_id": row.owner_id,
            "tags": row.tags,
            "parent_id": row.parent_id,
            "terminated_at": row.terminated_at,
            "created_at": row.created_at,
            "last_activity_at": row.last_activity_at,
            "last_message_preview": row.last_message_preview,
            "last_message_at": row.last_message_at,
            "agent__name": agent.name,
            "agent__title": agent.title,
            "agent__type": agent.type,
            "agent__description": agent.description,
            "agent__icon": agent.icon,
            "agent__side_a_prompt_id": agent.side_a_prompt_id,
            "agent__side_a_handler": agent.side_a_handler,
            "agent__side_b_handler": agent.side_b_handler,
            "origin_agent__name": row.origin_agent.name,
        },
        executing,
        origin,
    )


def thread_item_of_values(v: dict[str, Any], executing: bool, origin: str | None) -> dict[str, Any]:
    """``thread_item`` from a ``values()`` row with ``selectors.THREAD_ITEM_FIELDS`` (the
    thread list builds no model instances: three per thread were most of its time)."""
    return {
        "id": str(v["id"]),
        "agent_id": v["agent__name"],
        "origin_agent_id": v["origin_agent__name"],
        "user_id": str(v["owner_id"]) if v["owner_id"] else None,
        "tags": list(v["tags"] or []),
        "parent": str(v["parent_id"]) if v["parent_id"] else None,
        "terminated": micros(v["terminated_at"]),
        "created_at": seconds(v["created_at"]),
        "last_activity_at": seconds(v["last_activity_at"]),
        "executing": executing,
        "last_message_preview": v["last_message_preview"] or None,
        "last_message_at": seconds(v["last_message_at"]),
        "agent": _agent_summary(
            v["agent__name"],
            v["agent__title"],
            v["agent__type"],
            v["agent__description"],
            v["agent__icon"],
            origin,
            v.get("agent__side_a_prompt_id", 0) is None and not v.get("agent__side_a_handler"),
            (v.get("agent__side_a_handler") or "", v.get("agent__side_b_handler") or ""),
        ),
    }


def registry_thread(values: dict[str, Any], executing: bool) -> dict[str, Any]:
    """The registry socket's thread shape (``agent_name`` instead of ``agent_id``), from a
    row with ``selectors.THREAD_ITEM_FIELDS``."""
    item = thread_item_of_values(values, executing, configured_origin())
    item["agent_name"] = item.pop("agent_id")
    item["origin_agent_name"] = item.pop("origin_agent_id")
    return item


def thread_detail(
    row: Thread, message_count: int, log_count: int, origin: str | None = None
) -> dict[str, Any]:
    agent = row.agent
    a, b = side_backings(agent)
    return {
        "thread": {
            "id": str(row.id),
            "agent_id": agent.name,
            "user_id": str(row.owner_id) if row.owner_id else None,
            "tags": list(row.tags or []),
            "parent": str(row.parent_id) if row.parent_id else None,
            "terminated": micros(row.terminated_at),
            "created_at": seconds(row.created_at),
        },
        "agent": {
            "id": agent.name,
            "title": agent.title or agent.name,
            "description": agent.description or None,
            "icon": icon_url(agent.icon, origin),
            "side_a_backing": a,
            "side_b_backing": b,
            "side_a_label": agent.side_a_label or None,
            "side_b_label": agent.side_b_label or None,
            "side_a_agent_prompt": agent.side_a_prompt.name if agent.side_a_prompt else None,
            "side_b_agent_prompt": agent.side_b_prompt.name if agent.side_b_prompt else None,
            "side_a_handler": agent.side_a_handler or None,
            "side_b_handler": agent.side_b_handler or None,
            "feedback_reasons": list(agent.feedback_reasons),  # ours (docs/observability.md)
            "tool_activity": agent.tool_activity or None,  # ours (docs/chat.md)
        },
        "stats": {"message_count": message_count, "log_count": log_count},
    }


# --- logs ----------------------------------------------------------------------------


def _tools_called(row: Log) -> str | None:
    """A JSON-encoded array of tool names, as the reference sends it (null when none)."""
    body = row.response_body if isinstance(row.response_body, dict) else {}
    names = []
    for call in body.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            names.append(str(fn["name"]))
    if row.kind == Log.Kind.TOOL and row.tool_name:
        names.append(row.tool_name)
    return json.dumps(names) if names else None


def _json_text(value: Any, redact: Callable[[Any], Any] | None) -> str | None:
    """Log bodies leave as JSON strings (the reference stores and sends them as text).
    Secrets are replaced before encoding: inside a doubly escaped string the response-level
    redactor would no longer recognise a secret with quotes or backslashes."""
    if value is None:
        return None
    return json.dumps(redact(value) if redact else value, ensure_ascii=False)


def log_item(row: Log, *, stopped: bool = False) -> dict[str, Any]:
    """One request log as the Logs API lists it; ``stopped``: a person's Stop ended it."""
    return {
        "id": str(row.id),
        "kind": row.kind,
        "message_id": str(row.message_id) if row.message_id else None,
        "provider": row.provider or None,
        "actual_provider": None,
        "standard_agents_router_used": False,
        "model": row.model or None,
        "model_name": row.model_id or None,
        "prompt_name": row.prompt_name or None,
        "tool_name": row.tool_name or None,
        "tool_call_id": row.tool_call_id or None,
        "tools_called": _tools_called(row),
        "queued_tools": None,
        "provider_tools": provider_tools_called(row.response_body),
        "parent_log_id": str(row.parent_id) if row.parent_id else None,
        "retry_of_log_id": str(row.retry_of_id) if row.retry_of_id else None,
        "attempt": row.attempt,
        "error": row.error or None,
        "error_type": row.error_type or None,
        "error_origin": row.error_origin or None,
        "finish_reason": row.finish_reason or None,
        # None: no price was known for the model (never a silent 0; docs/providers.md).
        "cost_total": float(row.cost_total) if row.cost_known else None,
        "input_tokens": row.input_tokens,
        "cached_tokens": row.cached_tokens,
        "output_tokens": row.output_tokens,
        "reasoning_tokens": row.reasoning_tokens,
        "total_tokens": row.total_tokens,
        "latency_ms": row.latency_ms,
        "time_to_first_token_ms": row.time_to_first_token_ms,
        "is_complete": row.is_complete,
        "created_at": row.created_at,
        # Ours: the definition versions the request ran on ({"prompts/<name>": 2, …}).
        "definition_versions": row.definition_versions,
        # Ours: a person's Stop ended it, so it is no failure, even where the data says
        # "interrupted" (a stop before any text; selectors.cut_short_by_a_stop).
        "stopped_by_user": stopped,
    }


def log_detail(
    row: Log,
    source: Message | None,
    redact: Callable[[Any], Any] | None = None,
    *,
    stopped: bool = False,
) -> dict[str, Any]:
    data = log_item(row, stopped=stopped)
    data.update(
        {
            "status_code": row.status_code,
            "cost_input": float(row.cost_input) if row.cost_known else None,
            "cost_cached": float(row.cost_cached) if row.cost_known else None,
            "cost_output": float(row.cost_output) if row.cost_known else None,
            "cost_router_fee": 0.0,
            "request_body": _json_text(row.request_body, redact),
            "response_body": _json_text(row.response_body, redact),
            "system_prompt": row.system_prompt or None,
            "source_message_content": source.content if source else None,
            "source_message_role": source.role if source else None,
            "source_message_created_at": source.created_at if source else None,
        }
    )
    return data


# --- effects and files -----------------------------------------------------------------


def effect_run(row: ScheduledEffect, *, with_args: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(row.id),
        "name": row.name,
        "scheduledAt": millis(row.due_at),
        "createdAt": millis(row.created_at),
        "status": row.status,
        "attempts": row.attempts,
        "error": row.error or None,
        "completedAt": millis(row.completed_at),
        "manualRun": row.manual_run,
        "manualRunAt": millis(row.manual_run_at),
        "replayedFrom": str(row.replayed_from_id) if row.replayed_from_id else None,
    }
    if with_args:
        data["args"] = row.args
    return data


def attachment_ref(row: ThreadFile) -> dict[str, Any]:
    """The reference's AttachmentRef."""
    ref: dict[str, Any] = {
        "id": row.path,
        "type": "file",
        "path": row.path,
        "name": row.name,
        "mimeType": row.mime_type,
        "size": row.size,
    }
    if row.width is not None:
        ref["width"] = row.width
    if row.height is not None:
        ref["height"] = row.height
    return ref
