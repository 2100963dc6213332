"""The AG-UI door's wire (``/ag-ui``): AG-UI 1.0's events as JSON, camelCase, one per SSE
``data:`` line, as its ``EventEncoder`` writes them.

Built here with our own code: the ``ag-ui-protocol`` package is a dev dependency only, the
tests validate every event this module makes with its pydantic models. Optional fields
without a value are left out, as the protocol's producers do.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from agents_app.services.doors.openai_compat import Usage

PROTOCOL_VERSION = "1.0"


def sse(event: dict[str, Any]) -> bytes:
    """One event as a server-sent event."""
    return b"data: " + orjson.dumps(event) + b"\n\n"


def encode(body: Any) -> bytes:
    return orjson.dumps(body)


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    event = {"type": kind, "timestamp": int(time.time() * 1000)}
    event.update({k: v for k, v in fields.items() if v is not None})
    return event


def run_started(thread_id: str, run_id: str, ours: str) -> dict[str, Any]:
    """The run's first event: the front end's own ``threadId``, ours in ``metadata``."""
    return _event(
        "RUN_STARTED",
        threadId=thread_id,
        runId=run_id,
        protocolVersion=PROTOCOL_VERSION,
        metadata={"threadId": ours},
    )


def run_finished(
    thread_id: str,
    run_id: str,
    usage: Usage | None,
    interrupts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run's last event; with ``interrupts``, the run is paused on them (AG-UI's
    ``interrupt`` outcome: a run whose ``resume`` answers them continues it)."""
    tokens = None
    if usage is not None and usage.total_tokens:
        tokens = [
            {
                "inputTokens": usage.prompt_tokens,
                "outputTokens": usage.completion_tokens,
                "totalTokens": usage.total_tokens,
                "reasoningTokens": usage.reasoning_tokens,
                "cachedInputTokens": usage.cached_tokens,
            }
        ]
    outcome: dict[str, Any] = {"type": "success"}
    if interrupts:
        outcome = {"type": "interrupt", "interrupts": interrupts}
    return _event("RUN_FINISHED", threadId=thread_id, runId=run_id, outcome=outcome, usage=tokens)


def run_error(message: str, code: str | None) -> dict[str, Any]:
    return _event("RUN_ERROR", message=message, code=code)


def step_started(name: str) -> dict[str, Any]:
    return _event("STEP_STARTED", stepName=name)


def step_finished(name: str) -> dict[str, Any]:
    return _event("STEP_FINISHED", stepName=name)


def text_start(message_id: str) -> dict[str, Any]:
    return _event("TEXT_MESSAGE_START", messageId=message_id, role="assistant")


def text_content(message_id: str, delta: str) -> dict[str, Any]:
    return _event("TEXT_MESSAGE_CONTENT", messageId=message_id, delta=delta)


def text_end(message_id: str) -> dict[str, Any]:
    return _event("TEXT_MESSAGE_END", messageId=message_id)


def tool_start(call_id: str, name: str, message_id: str) -> dict[str, Any]:
    return _event(
        "TOOL_CALL_START", toolCallId=call_id, toolCallName=name, parentMessageId=message_id
    )


def tool_args(call_id: str, delta: str) -> dict[str, Any]:
    return _event("TOOL_CALL_ARGS", toolCallId=call_id, delta=delta)


def tool_end(call_id: str) -> dict[str, Any]:
    return _event("TOOL_CALL_END", toolCallId=call_id)


def tool_result(message_id: str, call_id: str, content: str) -> dict[str, Any]:
    return _event(
        "TOOL_CALL_RESULT", messageId=message_id, toolCallId=call_id, content=content, role="tool"
    )


def state_snapshot(state: dict[str, Any]) -> dict[str, Any]:
    return _event("STATE_SNAPSHOT", snapshot=state)


def state_delta(ops: list[dict[str, Any]]) -> dict[str, Any]:
    return _event("STATE_DELTA", delta=ops)
