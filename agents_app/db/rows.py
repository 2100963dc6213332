"""Conversions between ORM rows and the engine's records."""

from __future__ import annotations

import uuid
from typing import Any

from agents_app.models import Log, Message, QueuedMessage, ThreadSession
from runtime.core.messages import Message as EngineMessage
from runtime.core.progress import SessionProgress
from runtime.store.protocol import LogRecord

MESSAGE_UPDATE_FIELDS = [
    "role",
    "content",
    "name",
    "tool_calls",
    "tool_call_id",
    "tool_status",
    "status",
    "created_at",
    "request_sent_at",
    "response_completed_at",
    "parent",
    "depth",
    "silent",
    "metadata",
    "side",
    "attachments",
    "reasoning_content",
    "reasoning_details",
    "log",
    "prompt_name",
    "subagent",
]

LOG_FIELDS = [
    "message_id",
    "kind",
    "provider",
    "model",
    "model_id",
    "prompt_name",
    "attempt",
    "tool_name",
    "tool_call_id",
    "request_body",
    "response_body",
    "system_prompt",
    "status_code",
    "finish_reason",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cost_input",
    "cost_cached",
    "cost_output",
    "cost_total",
    "cost_known",
    "latency_ms",
    "time_to_first_token_ms",
    "error",
    "error_type",
    "error_origin",
    "is_complete",
    "created_at",
    "definition_versions",
]
LOG_UPDATE_FIELDS = [*LOG_FIELDS, "parent", "retry_of"]


def _uuid(value: str | None) -> uuid.UUID | None:
    return uuid.UUID(value) if value else None


def message_row(thread_id: str, m: EngineMessage) -> Message:
    return Message(
        id=uuid.UUID(m.id),
        thread_id=thread_id,
        role=m.role,
        content=m.content,
        name=m.name,
        tool_calls=m.tool_calls,
        tool_call_id=m.tool_call_id,
        tool_status=m.tool_status,
        status=m.status,
        created_at=m.created_at,
        request_sent_at=m.request_sent_at,
        response_completed_at=m.response_completed_at,
        parent_id=_uuid(m.parent_id),
        depth=m.depth,
        silent=m.silent,
        metadata=m.metadata or {},
        side=m.side or "",
        attachments=m.attachments,
        reasoning_content=m.reasoning_content,
        reasoning_details=m.reasoning_details,
        log_id=_uuid(m.log_id),
        prompt_name=m.prompt_name or "",
        subagent_id=_uuid(m.subagent_id),
    )


def engine_message(row: Message) -> EngineMessage:
    return EngineMessage(
        id=str(row.id),
        role=row.role,  # type: ignore[arg-type]
        content=row.content,
        name=row.name,
        tool_calls=row.tool_calls,
        tool_call_id=row.tool_call_id,
        tool_status=row.tool_status,  # type: ignore[arg-type]
        status=row.status,  # type: ignore[arg-type]
        created_at=row.created_at,
        request_sent_at=row.request_sent_at,
        response_completed_at=row.response_completed_at,
        parent_id=str(row.parent_id) if row.parent_id else None,
        depth=row.depth,
        silent=row.silent,
        metadata=row.metadata or {},
        side=row.side or None,  # type: ignore[arg-type]
        attachments=row.attachments,
        reasoning_content=row.reasoning_content,
        reasoning_details=row.reasoning_details,
        log_id=str(row.log_id) if row.log_id else None,
        prompt_name=row.prompt_name or None,
        subagent_id=str(row.subagent_id) if row.subagent_id else None,
    )


def queued_to_message(row: QueuedMessage, created_at: int) -> Message:
    side = "a" if row.role == "assistant" else ("b" if row.role == "user" else "")
    return Message(
        id=row.id,
        thread_id=row.thread_id,
        role=row.role,
        content=row.content,
        attachments=row.attachments,
        silent=row.silent,
        metadata=row.metadata or {},
        status=Message.Status.COMPLETED,
        depth=0,
        side=side,
        created_at=created_at,
    )


def log_row(thread_id: str, log: LogRecord) -> Log:
    row = Log(
        id=uuid.UUID(log.id),
        thread_id=thread_id,
        parent_id=_uuid(log.parent_id),
        retry_of_id=_uuid(log.retry_of_id),
    )
    for name in LOG_FIELDS:
        value: Any = getattr(log, name)
        if name == "message_id":
            value = _uuid(value)
        setattr(
            row, name, value if value is not None or name not in ("error", "finish_reason") else ""
        )
    return row


def engine_log(row: Log) -> LogRecord:
    values = {name: getattr(row, name) for name in LOG_FIELDS}
    for name in ("cost_input", "cost_cached", "cost_output", "cost_total"):
        values[name] = float(values[name])
    values["message_id"] = str(row.message_id) if row.message_id else None
    return LogRecord(
        id=str(row.id),
        thread_id=str(row.thread_id),
        parent_id=str(row.parent_id) if row.parent_id else None,
        retry_of_id=str(row.retry_of_id) if row.retry_of_id else None,
        **values,
    )


def session_status(progress: SessionProgress) -> str:
    """The session row's status for ``progress``: running until it finishes, then how it ended."""
    if not progress.finished:
        if progress.stop_reason == "awaiting_tool":
            return ThreadSession.Status.PARKED
        return ThreadSession.Status.RUNNING
    if progress.stop_reason == "aborted_by_user":
        return ThreadSession.Status.STOPPED
    if progress.stop_reason == "step_error":
        return ThreadSession.Status.FAILED
    return ThreadSession.Status.COMPLETED
