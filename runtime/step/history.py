"""What the model sees: stored rows → chat messages for one request.

In order (``filter_messages`` runs between ``select_rows`` and ``to_llm_messages``):
1. ``select_rows``: completed rows only (pending and failed rows are never
   sent); without ``includeChat`` only the rows of the current session.
2. ``to_llm_messages``: without ``includePastTools`` tool rows and tool calls
   from before the current turn are dropped; in ``dual_ai`` the acting side's
   messages become ``assistant`` and the other side's ``user`` (the other
   side's tool calls and results are hidden); every assistant tool call is
   followed directly by its result, a call whose result is missing gets a
   synthesized error result, and results whose call is gone are dropped, so a
   history damaged by an interruption never breaks the request. A tool result
   says ``is_error`` when it failed; an assistant message sent as the acting
   side's own carries its response's ``provider_data`` (thinking signatures,
   reasoning details) so the vendor can continue from it. A message with
   attachments gets list content: its text plus one ``attachment`` part per
   file, resolved into image / document / text parts by ``runtime.step.media``.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from runtime.core.messages import Message, Side, side_of
from runtime.core.transcript import Transcript
from runtime.step.media import with_attachments

MISSING_RESULT = "Error: this tool call did not complete (no result was stored)."


@dataclass(slots=True)
class Window:
    """How a request looks at the history (from the prompt and the session's progress)."""

    include_chat: bool
    include_past_tools: bool
    session_start: int
    turn_start: int
    side: Side
    perspective: bool


def select_rows(messages: Iterable[Message], window: Window) -> list[Message]:
    """Completed rows the request may use (``includeChat`` applied)."""
    return [
        m
        for m in messages
        if m.status not in ("pending", "failed")
        and (window.include_chat or m.created_at >= window.session_start)
    ]


@dataclass(slots=True)
class Selected:
    """``select_rows`` kept by a session from request to request: the next request reads the
    transcript again only from the first row changed since (``Transcript.changed_since``),
    so selecting costs what was added, not the session's length (issue #39)."""

    transcript: Transcript | None = None
    key: tuple[bool, int] | None = None
    revision: int = 0
    rows: list[Message] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)  # each row's index in the transcript


def select_from(transcript: Transcript, window: Window, selected: Selected) -> list[Message]:
    """``select_rows(transcript.messages, window)``, updating ``selected``; the list
    returned is the caller's."""
    key = (window.include_chat, window.session_start)
    start = 0
    if selected.transcript is transcript and selected.key == key:
        start = transcript.changed_since(selected.revision)
        keep = bisect.bisect_left(selected.sources, start)
        del selected.rows[keep:], selected.sources[keep:]
    else:
        selected.rows, selected.sources = [], []
    messages = transcript.messages
    for index in range(start, len(messages)):
        message = messages[index]
        if message.status not in ("pending", "failed") and (
            window.include_chat or message.created_at >= window.session_start
        ):
            selected.rows.append(message)
            selected.sources.append(index)
    selected.transcript, selected.key = transcript, key
    selected.revision = transcript.revision
    return list(selected.rows)


@dataclass(slots=True)
class Converted:
    """The last request's conversion, kept by a session so the next step converts only the
    rows added since (issue #39: converting the whole history at every step made a step's
    cost grow with the session).

    Rows are never changed in place once in the transcript (a new version is a new object),
    so a prefix of identical row objects under the same window converts to the same
    messages. ``to_llm_messages`` falls back to a whole conversion whenever the new rows
    could change an earlier message: a tool result answering an earlier call, or a call
    whose result came earlier.
    """

    window: Window | None = None
    rows: list[Message] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    call_ids: set[str] = field(default_factory=set)  # calls and results of ``rows``
    # Whether any message has list content (attachments): without, ``media`` has nothing to do.
    has_parts: bool = False


def to_llm_messages(
    rows: list[Message], window: Window, converted: Converted | None = None
) -> list[dict[str, Any]]:
    """Chat-format messages for the provider, with tool calls and results paired.

    With ``converted`` (the previous step's), the rows it already holds are not converted
    again; it is updated to this conversion. The list returned is the caller's to change;
    its message dicts are shared with later requests and must not be changed in place.
    """
    if converted is None:
        return _convert(rows, window)
    done = len(converted.rows)
    tail = rows[done:]
    if (
        converted.window != window
        or len(rows) < done
        or not all(map(operator.is_, rows[:done], converted.rows))
        or _touches(tail, converted.call_ids)
    ):
        converted.window, converted.messages, converted.call_ids = window, [], set()
        converted.has_parts = False
        tail = rows
    new = _convert(tail, window)
    converted.messages += new
    converted.has_parts = converted.has_parts or any(isinstance(m["content"], list) for m in new)
    converted.rows = list(rows)
    converted.call_ids.update(_call_ids(tail))
    return list(converted.messages)


def _call_ids(rows: list[Message]) -> set[str]:
    ids = {m.tool_call_id for m in rows if m.role == "tool" and m.tool_call_id}
    for m in rows:
        ids.update(c["id"] for c in m.tool_calls or ())
    return ids


def _touches(tail: list[Message], earlier: set[str]) -> bool:
    """Whether ``tail`` answers a call of the earlier rows or calls one they answered."""
    return bool(earlier) and not earlier.isdisjoint(_call_ids(tail))


def _convert(rows: list[Message], window: Window) -> list[dict[str, Any]]:
    shaped = [s for s in (_shape(m, window) for m in rows) if s is not None]
    results = {m.tool_call_id: m for m, _ in shaped if m.role == "tool" and m.tool_call_id}
    out: list[dict[str, Any]] = []
    for message, role in shaped:
        if message.role == "tool":
            continue  # emitted right after the call that asked for it
        calls = message.tool_calls if role == "assistant" else None
        out.append(_llm_message(message, role, calls))
        for call in calls or ():
            out.append(_result_for(call["id"], call["function"]["name"], results.get(call["id"])))
    return out


def _shape(message: Message, window: Window) -> tuple[Message, str] | None:
    """The message as the acting side sees it, with its role, or ``None`` when hidden."""
    past = message.created_at < window.turn_start and not window.include_past_tools
    if message.role == "tool":
        return None if past else (message, "tool")
    if message.role == "system":
        return message, "system"
    role = message.role
    if window.perspective:
        role = "assistant" if side_of(message) == window.side else "user"
    if (past or role != "assistant") and message.tool_calls:
        message = message.copy(tool_calls=None)
    if not message.content and not message.tool_calls and not message.attachments:
        return None
    return message, role


def _llm_message(message: Message, role: str, calls: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": _content(message)}
    if calls:
        out["tool_calls"] = [dict(c) for c in calls]
    data = message.metadata.get("provider_data")
    if role == "assistant" and data:
        # Only on the side's own messages: the signatures are the model's own reasoning.
        out["provider_data"] = data
    return out


def _content(message: Message) -> str | list[dict[str, Any]] | None:
    """The text, or text plus ``attachment`` parts (``runtime.step.media`` resolves them)."""
    text = message.content
    if message.attachments:
        return with_attachments(text, message.attachments)
    if text is None and message.role != "assistant":
        return ""
    return text


def _result_for(call_id: str, name: str, row: Message | None) -> dict[str, Any]:
    text = row.content if row is not None and row.content is not None else MISSING_RESULT
    # Images a tool returned (ImageContent, or files it attached) go with its result.
    content: str | list[dict[str, Any]] = (
        with_attachments(text, row.attachments) if row is not None and row.attachments else text
    )
    out: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": call_id,
        "name": name,
        "content": content,
    }
    if row is None or row.content is None or row.tool_status == "error":
        out["is_error"] = True  # Anthropic's is_error, Gemini's {"error": …} response
    return out
