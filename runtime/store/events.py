"""The event sink protocol and the live frames the engine emits (reference wire shapes).

The engine emits a frame after the write it describes has been committed, so
a listener that re-reads the store never sees a frame "from the future".
Frames are live-only and at-most-once: clients reload state over HTTP after a
reconnect. Tokens (``message_chunk``/``reasoning_chunk``) are never stored.

Frame shapes (all JSON-serializable dicts; ``timestamp`` in ms):

- ``{type:"message_data", message_id, depth, data: <Message wire dict>}``; a message queued
  for a later step is sent at once as ``pending`` with ``metadata.queued`` (``queued_data``)
- ``{type:"message_chunk", message_id, depth, chunk}`` and ``reasoning_chunk`` alike
- ``{type:"message_image", message_id, depth, index, attachment}``: a generated image,
  already stored in the thread file system (``attachment`` is its ``AttachmentRef``)
- telemetry, unwrapped: ``step_started {step, side}``, ``step_completed {step, stopped}``,
  ``llm_request {model, attempt}`` (one per attempt), ``fallback_triggered {from, to}``
  (the attempt ladder moves to the next model), ``llm_response {tokens, latency}``,
  ``tool_started {tool}``, ``tool_completed {tool, status}``, ``stopped {reason, side}``,
  ``agent_handoff {new_agent_id, new_agent_title}`` (each with ``timestamp``)
- ``{type:"event", eventType, data, timestamp}``: ``tool_call_started {id, name}``,
  ``tool_call_done {id, name, status}``, ``kv_changed {key, deleted, updated_at}``,
  ``file_created {path, file}``, ``file_deleted {path}`` and custom ``state.emit`` events
- ``{type:"log_data", log_id, data}``: for the logs socket (patch semantics)
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Protocol, runtime_checkable

from runtime.core.messages import Message, now_ms, to_wire
from runtime.core.provider_tools import ProviderToolDone, WebSearchDone
from runtime.store.protocol import LogRecord, QueuedMessage

Frame = dict[str, Any]

TELEMETRY_TYPES = frozenset(
    {
        "step_started",
        "step_completed",
        "llm_request",
        "fallback_triggered",
        "llm_response",
        "tool_started",
        "tool_completed",
        "stopped",
        "agent_handoff",
    }
)


@runtime_checkable
class EventSink(Protocol):
    """Where live frames go (a Channels group per thread in production)."""

    def emit(self, thread_id: str, frame: Frame) -> None:
        """Deliver ``frame`` to the listeners of ``thread_id``.

        Must not block and must not raise: implementations buffer or schedule
        the send (e.g. ``loop.create_task(group_send(...))``) and drop frames
        they cannot deliver. Called from the engine's event loop.
        """
        ...


class NullSink:
    """A sink that drops every frame."""

    def emit(self, thread_id: str, frame: Frame) -> None:
        """Drop the frame."""


class ListSink:
    """A sink that keeps every frame in memory, per thread (tests, the bench)."""

    def __init__(self) -> None:
        self.frames: dict[str, list[Frame]] = defaultdict(list)

    def emit(self, thread_id: str, frame: Frame) -> None:
        """Append the frame to ``frames[thread_id]``."""
        self.frames[thread_id].append(frame)

    def of_type(self, thread_id: str, frame_type: str) -> list[Frame]:
        """The frames of one ``type`` sent to one thread, in order."""
        return [f for f in self.frames[thread_id] if f.get("type") == frame_type]

    def events(self, thread_id: str, event_type: str) -> list[Frame]:
        """The ``event`` frames of one ``eventType``."""
        return [f for f in self.of_type(thread_id, "event") if f.get("eventType") == event_type]


# --- frame builders ----------------------------------------------------------------------


def message_data(message: Message) -> Frame:
    """A full message snapshot (sent on every insert or update)."""
    return {
        "type": "message_data",
        "message_id": message.id,
        "depth": message.depth,
        "data": to_wire(message),
    }


def queued_data(message: QueuedMessage) -> Frame:
    """A message just queued, shown at once as the reference's provisional row: ``pending``,
    ``metadata.queued`` (the shape ``GET …/messages`` gives queued rows). When a step takes
    it, the stored row (same id) follows as an ordinary ``message_data``."""
    metadata = {
        **message.metadata,
        "queued": True,
        "queue_status": "queued",
        "queue_source": "message_queue",
        "queue_id": message.id,
    }
    row = Message(
        id=message.id,
        role=message.role,
        content=message.content,
        status="pending",
        created_at=message.created_at or now_ms() * 1000,
        silent=message.silent,
        metadata=metadata,
        attachments=list(message.attachments or []),
    )
    return message_data(row)


def message_chunk(message_id: str, depth: int, chunk: str, *, reasoning: bool = False) -> Frame:
    """A streamed text (or reasoning) delta of a pending message."""
    kind = "reasoning_chunk" if reasoning else "message_chunk"
    return {"type": kind, "message_id": message_id, "depth": depth, "chunk": chunk}


def message_image(message_id: str, depth: int, index: int, attachment: dict[str, Any]) -> Frame:
    """An image the model generated, stored and referenced while its message still streams."""
    return {
        "type": "message_image",
        "message_id": message_id,
        "depth": depth,
        "index": index,
        "attachment": attachment,
    }


def provider_tool_frame(message_id: str, depth: int, item: object) -> Frame | None:
    """A live frame for what the vendor ran while the message streams: ``provider_tool_done``
    (the spec's ``provider-tool-done`` chunk, ``tool`` in ``ProviderExecutedToolResult`` JSON)
    or ``web_search_done`` (``web-search-done``: the search's queries and sources). Citations
    travel with the final message (its ``citations``), so they get no frame."""
    base = {"message_id": message_id, "depth": depth}
    if isinstance(item, ProviderToolDone):
        return {"type": "provider_tool_done", **base, "tool": item.tool.dump()}
    if isinstance(item, WebSearchDone):
        return {"type": "web_search_done", **base, "id": item.id, "result": item.result}
    return None


def telemetry(kind: str, **fields: Any) -> Frame:
    """An unwrapped telemetry frame such as ``step_started``."""
    return {"type": kind, **fields, "timestamp": now_ms()}


def event(event_type: str, data: Any) -> Frame:
    """A custom or system event frame."""
    return {"type": "event", "eventType": event_type, "data": data, "timestamp": now_ms()}


LOG_LIST_FIELDS = (
    "id",
    "message_id",
    "kind",
    "provider",
    "model",
    "prompt_name",
    "tool_name",
    "tool_call_id",
    "error",
    "error_type",
    "finish_reason",
    "cost_total",
    "cost_input",
    "cost_cached",
    "cost_output",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "reasoning_tokens",
    "total_tokens",
    "latency_ms",
    "time_to_first_token_ms",
    "is_complete",
    "created_at",
)


def tools_called(log: LogRecord) -> str | None:
    """The reference's ``tools_called``: a JSON-encoded array of tool names (or null)."""
    body = log.response_body if isinstance(log.response_body, dict) else {}
    names: list[str] = []
    for call in body.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            names.append(str(fn["name"]))
    if log.kind == "tool" and log.tool_name:
        names.append(log.tool_name)
    return json.dumps(names) if names else None


def provider_tools_called(response_body: Any) -> str | None:
    """The reference's ``provider_tools``: the provider-run tools of a response as a
    JSON-encoded array (``ProviderExecutedToolResult`` JSON), or null."""
    body = response_body if isinstance(response_body, dict) else {}
    tools = body.get("provider_tools")
    return json.dumps(tools) if isinstance(tools, list) and tools else None


def log_data(log: LogRecord) -> Frame:
    """A log list item for the logs socket (no request/response bodies), in the
    reference's field names: ``model_name`` (the model definition), ``parent_log_id``,
    ``retry_of_log_id``, ``tools_called`` as a JSON string."""
    data: dict[str, Any] = {name: getattr(log, name) for name in LOG_LIST_FIELDS}
    data.update(
        model_name=log.model_id or None,
        parent_log_id=log.parent_id,
        retry_of_log_id=log.retry_of_id,
        tools_called=tools_called(log),
        provider_tools=provider_tools_called(log.response_body),
        actual_provider=None,
        standard_agents_router_used=False,
        error_origin=log.error_origin or None,
    )
    return {"type": "log_data", "log_id": log.id, "data": data}
