"""OpenAI Responses API answers → engine events, streamed (named SSE events) or whole.

Both paths share ``OutputItems``: a finished output item (``response.output_item.done``
in a stream, each entry of ``output`` in a body) becomes its events, and what the next
request needs of it is kept for ``provider_data["openai"]["items"]`` (in output order:
reasoning with ``encrypted_content``, provider tool calls without their bulky results,
and placeholders for the message and function calls, whose content the engine stores
anyway). Streams end with ``response.completed`` / ``response.incomplete`` (no
``[DONE]``); ``error`` and ``response.failed`` events raise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.core.provider_tools import CitationsFound
from runtime.providers import errors
from runtime.providers.adapter import FinishDetails, as_int, load_event_json
from runtime.providers.base import (
    FinishReason,
    ImageDelta,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    Usage,
)
from runtime.providers.openai.chat_completions import token_usage
from runtime.providers.openai.tool_items import TOOL_ITEMS, citations, tool_item_events
from runtime.providers.sse import SSEEvent

VENDOR = "OpenAI"
TERMINAL = ("response.completed", "response.incomplete")
IMAGE_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "webp": "image/webp"}
# What is kept of a provider tool item for the next request (results are not re-sent).
_ECHO_KEYS = {
    "web_search_call": ("id", "type", "status", "action"),
    "code_interpreter_call": ("id", "type", "status", "code", "container_id"),
    "file_search_call": ("id", "type", "status", "queries"),
    "image_generation_call": ("id", "type", "status"),
}
_CLEARED = {"code_interpreter_call": "outputs", "file_search_call": "results"}


def responses_usage(usage: Any) -> Usage:
    """``input_tokens`` (cached ones included) and ``output_tokens`` (reasoning included)."""
    return token_usage(usage, "input_tokens", "output_tokens")


def _echo(item: dict[str, Any]) -> dict[str, Any]:
    kind = str(item.get("type"))
    if kind == "reasoning":
        keys: tuple[str, ...] = ("id", "type", "summary", "encrypted_content")
        return {k: item[k] for k in keys if k in item}
    out = {k: item[k] for k in _ECHO_KEYS[kind] if k in item}
    if kind == "web_search_call" and isinstance(out.get("action"), dict):
        out["action"] = {k: v for k, v in out["action"].items() if k != "sources"}
    if kind in _CLEARED:
        out[_CLEARED[kind]] = None
    return out


@dataclass
class OutputItems:
    """Finished output items → events, and what round-trips."""

    text_len: int = 0  # characters of text emitted so far
    part_starts: dict[tuple[str, int], int] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""  # the model id the request named (the items are only valid for it)
    images: int = 0
    reasoned: bool = False
    reasoning_streamed: set[str] = field(default_factory=set)  # items whose deltas came

    def text(self, delta: str, key: tuple[str, int] | None = None) -> list[StreamEvent]:
        if key is not None:
            self.part_starts.setdefault(key, self.text_len)
        self.text_len += len(delta)
        return [TextDelta(delta)] if delta else []

    def reasoning(self, delta: str, new_part: bool) -> list[StreamEvent]:
        if not delta:
            return []
        if new_part and self.reasoned:
            delta = "\n\n" + delta
        self.reasoned = True
        return [ReasoningDelta(delta)]

    def done(self, item: dict[str, Any], streamed: bool) -> list[StreamEvent]:
        """Events of one finished item (``streamed``: its deltas were already emitted)."""
        kind = item.get("type")
        item_id = str(item.get("id") or "")
        if kind == "message":
            self.kept.append({"type": "message", "id": item_id})
            return self._message(item, item_id, streamed)
        if kind == "function_call":
            call_id = str(item.get("call_id") or item_id)
            self.kept.append({"type": "function_call", "id": item_id, "call_id": call_id})
            self.calls.append(call_id)
            name, arguments = str(item.get("name") or ""), str(item.get("arguments") or "{}")
            opening: list[StreamEvent] = (
                []
                if streamed
                else [ToolCallStart(call_id, name), ToolCallDelta(call_id, arguments)]
            )
            return [*opening, ToolCallDone(call_id, name, arguments)]
        if kind == "reasoning":
            self.kept.append(_echo(item))
            if streamed and item_id in self.reasoning_streamed:
                return []
            texts = [s.get("text") for s in item.get("summary") or [] if isinstance(s, dict)]
            texts += [c.get("text") for c in item.get("content") or [] if isinstance(c, dict)]
            events: list[StreamEvent] = []
            for text in texts:
                events += self.reasoning(str(text or ""), True)
            return events
        if kind in TOOL_ITEMS:
            self.kept.append(_echo(item))
            events = tool_item_events(item)
            if kind == "image_generation_call" and isinstance(item.get("result"), str):
                events.insert(0, self._image(item))
            return events
        return []

    def _message(self, item: dict[str, Any], item_id: str, streamed: bool) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        found = []
        for index, part in enumerate(item.get("content") or []):
            if not isinstance(part, dict):
                continue
            text = str(part.get("text") or part.get("refusal") or "")
            if streamed and (item_id, index) in self.part_starts:
                base = self.part_starts[(item_id, index)]
            else:  # not streamed, or no delta came for this part: its text is here only
                base = self.text_len
                events += self.text(text)
            found += citations(part.get("annotations"), text, base)
        if found:
            events.append(CitationsFound(found))
        return events

    def _image(self, item: dict[str, Any]) -> ImageDelta:
        media_type = IMAGE_TYPES.get(str(item.get("output_format") or "png"), "image/png")
        image = ImageDelta(
            self.images, media_type, data=item["result"], revised_prompt=item.get("revised_prompt")
        )
        self.images += 1
        return image

    def provider_data(self) -> dict[str, Any]:
        """``{"openai": {"items": [...]}}`` when anything beyond text and calls must round-trip."""
        if all(i.get("type") in ("message", "function_call") for i in self.kept):
            return {}
        return {"openai": {"model": self.model, "items": self.kept}}


def finish_reason(response: dict[str, Any], has_calls: bool) -> FinishReason:
    """``tool_calls`` when functions were called; an incomplete response says why."""
    if has_calls:
        return "tool_calls"
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return "content_filter" if reason == "content_filter" else "length"
    return "stop"


def finish(response: dict[str, Any], items: OutputItems) -> FinishDetails:
    status = response.get("status")
    incomplete = (response.get("incomplete_details") or {}).get("reason")
    return FinishDetails(
        finish_reason(response, bool(items.calls)),
        responses_usage(response.get("usage")),
        provider_data=items.provider_data(),
        response_model=response.get("model"),
        response_id=response.get("id"),
        vendor_finish_reason=f"{status}:{incomplete}" if incomplete else status,
    )


def failure(response: dict[str, Any]) -> errors.AdapterError:
    """The error of a ``failed`` response."""
    error = response.get("error")
    return errors.classify(
        VENDOR, None, error if isinstance(error, dict) else {"message": "failed"}
    )


class ResponsesStreamParser:
    """Named Responses SSE events → engine events."""

    def __init__(self, model: str = "") -> None:
        self.items = OutputItems(model=model)
        self.call_ids: dict[str, str] = {}  # item id → call id
        self.summary_at: tuple[str, int] | None = None
        self.response: dict[str, Any] | None = None

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        data = load_event_json(VENDOR, event)
        if not isinstance(data, dict):
            raise errors.malformed(VENDOR, "stream event is not an object")
        kind = str(data.get("type") or event.event or "")
        if kind == "error":
            nested = data.get("error")
            raise errors.classify(VENDOR, None, nested if isinstance(nested, dict) else data)
        if kind == "response.failed":
            raise failure(data.get("response") or {})
        if kind in TERMINAL:
            self.response = data.get("response") or {}
            return []
        return self._event(kind, data)

    def _event(self, kind: str, data: dict[str, Any]) -> list[StreamEvent]:
        item_id = str(data.get("item_id") or "")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            key = (item_id, as_int(data.get("content_index")))
            return self.items.text(str(data.get("delta") or ""), key)
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            at = (item_id, as_int(data.get("summary_index", data.get("content_index"))))
            new_part, self.summary_at = at != self.summary_at, at
            self.items.reasoning_streamed.add(item_id)
            return self.items.reasoning(str(data.get("delta") or ""), new_part)
        if kind == "response.function_call_arguments.delta":
            call_id = self.call_ids.get(item_id, item_id)
            return [ToolCallDelta(call_id, str(data.get("delta") or ""))]
        item = data.get("item")
        if not isinstance(item, dict):
            return []
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            call_id = str(item.get("call_id") or item.get("id") or "")
            self.call_ids[str(item.get("id") or "")] = call_id
            return [ToolCallStart(call_id, str(item.get("name") or ""))]
        if kind == "response.output_item.done":
            return self.items.done(item, streamed=True)
        return []

    def close(self) -> list[StreamEvent]:
        if self.response is None:
            raise errors.incomplete_stream(VENDOR, "response.completed")
        return [finish(self.response, self.items)]


def parse_response(payload: Any, model: str = "") -> list[StreamEvent]:
    """Events of a whole (non-streamed) response body (``model``: the id requested)."""
    if not isinstance(payload, dict):
        raise errors.malformed(VENDOR, "the body is not an object")
    if payload.get("status") == "failed" or isinstance(payload.get("error"), dict):
        raise failure(payload)
    items = OutputItems(model=model)
    events: list[StreamEvent] = []
    for item in payload.get("output") or []:
        if isinstance(item, dict):
            events += items.done(item, streamed=False)
    events.append(finish(payload, items))
    return events
