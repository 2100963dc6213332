"""Messages as the engine and the store see them (the reference's message fields).

A ``Message`` is a plain dataclass: the engine builds them, the store persists
them (one row each) and ``to_wire`` turns one into the reference's JSON shape
for ``message_data`` frames and the HTTP API.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypedDict

Role = Literal["system", "user", "assistant", "tool"]
Side = Literal["a", "b"]
MessageStatus = Literal["pending", "completed", "failed"]
ToolStatus = Literal["success", "error"]


class ToolCallFunction(TypedDict):
    name: str
    arguments: str  # JSON-encoded object, as the model produced it


class ToolCall(TypedDict):
    """One tool call in OpenAI shape: ``{id, type:'function', function:{name, arguments}}``."""

    id: str
    type: Literal["function"]
    function: ToolCallFunction


def new_id() -> str:
    """A random UUID4 string (``uuid.uuid4`` reads ``os.urandom``: cryptographically random)."""
    return str(uuid.uuid4())


# Metadata key of a queued assistant row that carries a tool call (``state.queue_tool`` on an
# idle thread): the session that takes it from the queue runs the call (``Session``).
QUEUED_TOOL_CALL = "queued_tool_call"


def make_tool_call(call_id: str, name: str, arguments: dict[str, Any] | str) -> ToolCall:
    """Build an OpenAI-shape tool call; ``arguments`` objects are JSON-encoded."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": encoded}}


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """The decoded arguments of a tool call; raises ``ValueError`` when not a JSON object."""
    raw = call["function"].get("arguments") or "{}"
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("tool arguments must be a JSON object")
    return value


@dataclass(slots=True)
class Message:
    """One row of a thread's conversation.

    ``created_at``, ``request_sent_at`` and ``response_completed_at`` are integer
    microseconds since the epoch; ``created_at`` is strictly increasing within a
    thread, so it orders the conversation totally. ``side`` is the side that
    authored the message (``None`` when not applicable: stores mapping to a
    blank column use ``""``). ``depth`` is 0 for the top-level conversation and
    parent depth + 1 for sub-prompt messages, whose ``parent_id`` is the id of
    the tool-result message of the call that started the sub-prompt.
    """

    id: str
    role: Role
    content: str | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    tool_status: ToolStatus | None = None
    status: MessageStatus | None = "completed"
    created_at: int = 0
    request_sent_at: int | None = None
    response_completed_at: int | None = None
    parent_id: str | None = None
    depth: int = 0
    silent: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    side: Side | None = None
    attachments: list[dict[str, Any]] | None = None
    reasoning_content: str | None = None
    reasoning_details: list[Any] | None = None
    log_id: str | None = None
    prompt_name: str | None = None
    subagent_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """All fields as a new dict (``tool_calls`` stays a list; ``metadata`` is a copy)."""
        data = {name: getattr(self, name) for name in _FIELD_NAMES}
        data["metadata"] = dict(self.metadata)
        return data

    def copy(self, **changes: Any) -> Message:
        """A copy with some fields replaced (lists and dicts are shared, not deep-copied)."""
        return replace(self, **changes)


_FIELD_NAMES = tuple(f.name for f in fields(Message))
MESSAGE_FIELDS = frozenset(_FIELD_NAMES)


def message_from_dict(data: dict[str, Any]) -> Message:
    """Rebuild a message from ``to_dict`` output (as hooks return it); unknown keys are ignored."""
    known = {k: v for k, v in data.items() if k in MESSAGE_FIELDS}
    return Message(**known)


def to_wire(message: Message) -> dict[str, Any]:
    """The reference's wire shape: ``tool_calls`` JSON-encoded, attachments always a list."""
    data = message.to_dict()
    data["tool_calls"] = json.dumps(message.tool_calls) if message.tool_calls else None
    data["attachments"] = message.attachments or []
    # Provider-run tools and the answer's sources, kept in metadata, also shown at the top
    # level under the spec's names (``providerTools`` → ``provider_tools``, ``citations``).
    for key in ("provider_tools", "citations"):
        if message.metadata.get(key):
            data[key] = message.metadata[key]
    return data


def role_for_side(side: Side) -> Role:
    """The stored role of a model message: side A writes ``assistant``, side B writes ``user``."""
    return "assistant" if side == "a" else "user"


def side_of(message: Message) -> Side | None:
    """Who authored a message: its ``side``, else derived from its stored role."""
    if message.side:
        return message.side
    if message.role == "assistant":
        return "a"
    if message.role == "user":
        return "b"
    return None


@dataclass(slots=True)
class NewMessage:
    """A message that starts a session (``role='user'`` → side A acts; ``'assistant'`` → side B)."""

    content: str
    role: Role = "user"
    id: str | None = None
    attachments: list[dict[str, Any]] | None = None
    silent: bool = False
    metadata: dict[str, Any] | None = None


class Clock:
    """Microsecond timestamps that never repeat or go backwards within one engine.

    ``observe`` moves the floor past timestamps written by someone else (the
    store's drained queue rows, messages already in the thread).
    """

    def __init__(self) -> None:
        self._last = 0

    def now(self) -> int:
        """The next timestamp: wall-clock µs, or one more than the last one handed out."""
        self._last = max(time.time_ns() // 1000, self._last + 1)
        return self._last

    def observe(self, timestamp: int | None) -> None:
        """Make sure later ``now()`` values are greater than ``timestamp``."""
        if timestamp is not None and timestamp > self._last:
            self._last = timestamp


def now_ms() -> int:
    """Wall-clock milliseconds (telemetry and event frames use ms)."""
    return time.time_ns() // 1_000_000
