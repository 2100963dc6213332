"""Anthropic Messages API (``POST {base}/messages``, ``anthropic-version: 2023-06-01``).

Wire notes (fixtures under /work/shared/fixtures/providers/anthropic):
- roles are ``user`` / ``assistant`` only: the system prompt is a top-level
  field, and all tool results of one step go in ONE user message, one
  ``tool_result`` block per ``tool_use``;
- thinking blocks (text + ``signature``) must be sent back unchanged at the
  start of the assistant turn; they travel in ``provider_data["anthropic"]``;
- ``input_tokens`` excludes cache reads and writes: the prompt is their sum;
- the stream is ``message_start`` … ``content_block_*`` … ``message_delta``
  (cumulative usage, stop reason) and ``message_stop``, the terminal event;
  tool arguments are ``input_json_delta`` fragments, ``""`` alone meaning ``{}``;
- server tools (``provider:web_search``, ``provider:code_execution``) are recorded and
  their blocks sent back next turn (``runtime.providers.anthropic.server_tools``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from runtime.core.spec import ModelDefinition
from runtime.providers import errors
from runtime.providers.adapter import (
    EFFORT_BUDGETS,
    ApiKey,
    FinishDetails,
    HTTPAdapter,
    PreparedRequest,
    StreamParser,
    as_int,
    content_parts,
    content_text,
    document_of,
    image_of,
    joined_text,
    load_event_json,
    parse_json_object,
    provider_data,
    tool_choice_name,
)
from runtime.providers.anthropic.server_tools import (
    ServerToolLog,
    echo_blocks,
    is_server_block,
    server_tools,
)
from runtime.providers.base import (
    FinishReason,
    ProviderRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    Usage,
)
from runtime.providers.sse import SSEEvent

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
MIN_THINKING_BUDGET = 1024  # the API rejects smaller budgets

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


# --- request ---------------------------------------------------------------------------------


def thinking_budget(request: ProviderRequest) -> int | None:
    """Thinking tokens to allow, or ``None`` for no extended thinking."""
    config = request.reasoning
    if config is None:
        return None
    if config.max_tokens:
        return max(config.max_tokens, MIN_THINKING_BUDGET)
    if config.effort:
        return max(EFFORT_BUDGETS[config.effort], MIN_THINKING_BUDGET)
    return MIN_THINKING_BUDGET if config.include else None


def anthropic_messages(request: ProviderRequest) -> tuple[list[dict[str, Any]], list[str]]:
    """History as alternating user/assistant turns, and system texts found in it."""
    turns: list[dict[str, Any]] = []
    system_extra: list[str] = []
    for message in request.messages:
        role = message.get("role")
        if role == "system":
            # No system role mid-conversation: it joins the top-level system prompt.
            text = content_text(message.get("content"))
            if text:
                system_extra.append(text)
            continue
        if role == "assistant":
            _append(turns, "assistant", _assistant_blocks(message))
        elif role == "tool":
            _append(turns, "user", [_tool_result(message)])
        else:
            _append(turns, "user", _user_blocks(message.get("content")))
    return turns, system_extra


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add blocks, merging into the previous turn when it has the same role.

    Tool results of a parallel batch become one user message; a user message
    right after them joins it (``tool_result`` blocks first, as the API wants).
    """
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in content_parts(content):
        if part.get("type") == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
            continue
        block = _media_block(part)
        if block is not None:
            blocks.append(block)
    return blocks


def _media_block(part: dict[str, Any]) -> dict[str, Any] | None:
    """An ``image`` block (base64 or url source) or a PDF ``document`` block."""
    image = image_of(part)
    if image is not None and image.data is not None:
        source = {"type": "base64", "media_type": image.media_type, "data": image.data}
        return {"type": "image", "source": source}
    if image is not None:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    document = document_of(part)
    if document is not None:
        source = {"type": "base64", "media_type": document.media_type, "data": document.data or ""}
        return {"type": "document", "source": source}
    return None


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    data = provider_data(message, "anthropic")
    # Generated images cannot be sent back as the assistant's: their names stand in.
    text = joined_text(message.get("content"), media_as_text=True)
    echoed = echo_blocks(message, data.get("blocks"), text)
    if echoed is not None:  # a turn with server tools goes back exactly as it came
        return echoed
    blocks: list[dict[str, Any]] = [dict(b) for b in data.get("thinking") or []]
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id", ""),
                "name": function.get("name", ""),
                "input": parse_json_object(function.get("arguments")),
            }
        )
    return blocks


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    """A ``tool_result``: its text, or content blocks when the tool returned images."""
    content = message.get("content")
    media = [b for b in map(_media_block, content_parts(content)) if b is not None]
    result: str | list[dict[str, Any]] = joined_text(content)
    if media:
        text = [{"type": "text", "text": result}] if result else []
        result = [*text, *media]
    return {
        "type": "tool_result",
        "tool_use_id": message.get("tool_call_id", ""),
        "content": result,
        "is_error": bool(message.get("is_error", False)),
    }


def anthropic_tool_choice(request: ProviderRequest) -> dict[str, Any]:
    name = tool_choice_name(request.tool_choice)
    if name is not None:
        choice: dict[str, Any] = {"type": "tool", "name": name}
    else:
        choice = {"type": {"required": "any", "none": "none"}.get(str(request.tool_choice), "auto")}
    if request.parallel_tool_calls is False and choice["type"] != "none":
        choice["disable_parallel_tool_use"] = True
    return choice


def anthropic_body(request: ProviderRequest, *, stream: bool, max_tokens: int) -> dict[str, Any]:
    """The Messages API body."""
    messages, system_extra = anthropic_messages(request)
    body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens, "messages": messages}
    system = "\n\n".join(s for s in [request.system, *system_extra] if s)
    if system:
        body["system"] = system
    tools: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]
    tools += server_tools(request.provider_tools)
    if tools:
        body["tools"] = tools
        body["tool_choice"] = anthropic_tool_choice(request)
    budget = thinking_budget(request)
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # max_tokens counts thinking too and must exceed the budget.
        if max_tokens <= budget:
            body["max_tokens"] = budget + DEFAULT_MAX_TOKENS // 2
    if request.response_schema is not None:
        # Native structured output (no beta header needed); the text block holds the JSON.
        body["output_config"] = {
            "format": {"type": "json_schema", "schema": request.response_schema}
        }
    body["stream"] = stream
    return body


# --- response ----------------------------------------------------------------------------------


def anthropic_usage(usage: dict[str, Any]) -> Usage:
    """The prompt is ``input + cache writes + cache reads``; cache reads are the cached part."""
    cache_read = as_int(usage.get("cache_read_input_tokens"))
    prompt = as_int(usage.get("input_tokens")) + cache_read
    prompt += as_int(usage.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=prompt,
        output_tokens=as_int(usage.get("output_tokens")),
        cached_tokens=cache_read,
    )


def stop_reason(raw: str | None, has_tool_calls: bool) -> FinishReason:
    reason = STOP_REASONS.get(raw or "", "stop")
    return "tool_calls" if has_tool_calls and reason == "stop" else reason


def _thinking_record(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data", "")}
    return {
        "type": "thinking",
        "thinking": block.get("thinking", ""),
        "signature": block.get("signature", ""),
    }


def _finish(
    raw_stop: str | None,
    usage: dict[str, Any],
    thinking: list[dict[str, Any]],
    has_calls: bool,
    model: str | None,
    response_id: str | None,
    server: ServerToolLog | None = None,
) -> FinishDetails:
    data = (server or ServerToolLog()).provider_data(thinking)
    return FinishDetails(
        stop_reason(raw_stop, has_calls),
        anthropic_usage(usage),
        provider_data={"anthropic": data} if data else {},
        response_model=model,
        response_id=response_id,
        vendor_finish_reason=raw_stop,
    )


def parse_message(payload: Any, show_reasoning: bool = True) -> list[StreamEvent]:
    """Events of a complete (non-streamed) Messages API response."""
    if not isinstance(payload, dict):
        raise errors.malformed("Anthropic", "the body is not an object")
    events: list[StreamEvent] = []
    thinking: list[dict[str, Any]] = []
    has_calls = False
    server = ServerToolLog()
    for block in payload.get("content") or []:
        kind = str(block.get("type", "")) if isinstance(block, dict) else ""
        if kind == "text" and block.get("text"):
            events.append(TextDelta(block["text"]))
            events += server.text(block, block["text"])
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(_thinking_record(block))
            server.other(_thinking_record(block))
            if kind == "thinking" and block.get("thinking") and show_reasoning:
                events.append(ReasoningDelta(block["thinking"]))
        elif kind == "tool_use":
            has_calls = True
            arguments = json.dumps(block.get("input") or {})
            call_id, name = str(block.get("id", "")), str(block.get("name", ""))
            events += [ToolCallStart(call_id, name), ToolCallDelta(call_id, arguments)]
            events.append(ToolCallDone(call_id, name, arguments))
            server.other(
                {"type": "tool_use", "id": call_id, "name": name, "input": block.get("input") or {}}
            )
        elif is_server_block(kind):
            events += server.server(block)
    container = payload.get("container")
    server.container = container if isinstance(container, dict) else None
    usage = payload.get("usage")
    events.append(
        _finish(
            payload.get("stop_reason"),
            usage if isinstance(usage, dict) else {},
            thinking,
            has_calls,
            payload.get("model"),
            payload.get("id"),
            server,
        )
    )
    return events


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    citations: list[dict[str, Any]] = field(default_factory=list)


class AnthropicStreamParser:
    """Messages API stream → events; ``message_stop`` is the terminal event."""

    vendor = "Anthropic"

    def __init__(self, show_reasoning: bool = True) -> None:
        self.blocks: dict[int, _Block] = {}
        self.thinking: list[dict[str, Any]] = []
        self.calls: list[ToolCallDone] = []
        self.usage: dict[str, Any] = {}
        self.stop: str | None = None
        self.model: str | None = None
        self.response_id: str | None = None
        self.stopped = False
        self.show_reasoning = show_reasoning
        self.server = ServerToolLog()

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        payload = load_event_json(self.vendor, event)
        kind = payload.get("type") if isinstance(payload, dict) else None
        if kind == "content_block_delta":  # the hot path first
            return self._delta(payload)
        if kind == "content_block_start":
            return self._start(payload)
        if kind == "content_block_stop":
            return self._stop(payload)
        if kind == "message_start":
            message = payload.get("message") or {}
            self.model, self.response_id = message.get("model"), message.get("id")
            self.usage.update(message.get("usage") or {})
        elif kind == "message_delta":
            self.stop = (payload.get("delta") or {}).get("stop_reason") or self.stop
            container = (payload.get("delta") or {}).get("container")
            if isinstance(container, dict):
                self.server.container = container
            self.usage.update(payload.get("usage") or {})  # cumulative totals
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise errors.classify(self.vendor, None, payload.get("error") or {})
        return []  # ping and unknown events

    def _start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        block = payload.get("content_block") or {}
        kind = str(block.get("type", ""))
        entry = _Block(kind, str(block.get("id", "")), str(block.get("name", "")))
        entry.data = str(block.get("data", ""))
        entry.raw = dict(block)
        self.blocks[int(payload.get("index", 0))] = entry
        if kind == "tool_use":
            return [ToolCallStart(entry.id, entry.name)]
        if kind == "text" and block.get("text"):
            entry.parts.append(block["text"])
            return [TextDelta(block["text"])]
        return []

    def _delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        block = self.blocks.get(int(payload.get("index", 0)))
        delta = payload.get("delta") or {}
        kind = delta.get("type")
        if block is None:
            return []
        if kind == "text_delta" and delta.get("text"):
            block.parts.append(delta["text"])
            return [TextDelta(delta["text"])]
        if kind == "citations_delta" and isinstance(delta.get("citation"), dict):
            block.citations.append(delta["citation"])
            return []
        if kind == "input_json_delta" and block.kind == "server_tool_use":
            block.parts.append(delta.get("partial_json") or "")
            return []
        if kind == "input_json_delta" and block.kind == "tool_use":
            piece = delta.get("partial_json") or ""
            block.parts.append(piece)
            return [ToolCallDelta(block.id, piece)] if piece else []
        if kind == "thinking_delta" and delta.get("thinking"):
            block.parts.append(delta["thinking"])
            return [ReasoningDelta(delta["thinking"])] if self.show_reasoning else []
        if kind == "signature_delta":
            block.signature += delta.get("signature") or ""
        return []

    def _stop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        block = self.blocks.get(int(payload.get("index", 0)))
        if block is None:
            return []
        if block.kind == "tool_use":
            done = ToolCallDone(block.id, block.name, "".join(block.parts) or "{}")
            self.calls.append(done)
            self.server.other(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": parse_json_object(done.arguments),
                }
            )
            return [done]
        if block.kind == "text":
            text = "".join(block.parts)
            return self.server.text({"citations": block.citations}, text) if text else []
        if block.kind == "server_tool_use":
            raw = {**block.raw, "input": parse_json_object("".join(block.parts) or "{}")}
            return self.server.server(raw)
        if is_server_block(block.kind):
            return self.server.server(block.raw)  # results arrive whole in the start event
        if block.kind == "thinking":
            record = {"thinking": "".join(block.parts), "signature": block.signature}
            self.thinking.append(_thinking_record({"type": "thinking", **record}))
            self.server.other(self.thinking[-1])
        elif block.kind == "redacted_thinking":
            self.thinking.append(
                _thinking_record({"type": "redacted_thinking", "data": block.data})
            )
            self.server.other(self.thinking[-1])
        return []

    def close(self) -> list[StreamEvent]:
        if not self.stopped:
            raise errors.incomplete_stream(self.vendor, "message_stop")
        return [
            _finish(
                self.stop,
                self.usage,
                self.thinking,
                bool(self.calls),
                self.model,
                self.response_id,
                self.server,
            )
        ]


# --- the adapter -------------------------------------------------------------------------------


class AnthropicProvider(HTTPAdapter):
    """Anthropic Messages API over an injected ``httpx.AsyncClient``."""

    name = "anthropic"
    vendor = "Anthropic"
    default_base_url = "https://api.anthropic.com/v1"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(
        self,
        client: httpx.AsyncClient,
        api_key: ApiKey,
        base_url: str | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        beta: list[str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client, api_key, base_url, **options)
        self.max_tokens = max_tokens
        if beta:
            self.extra_headers["anthropic-beta"] = ",".join(beta)

    @classmethod
    def for_model(
        cls, model: ModelDefinition, *, client: httpx.AsyncClient, api_key: ApiKey, **options: Any
    ) -> HTTPAdapter:
        return cls(client, api_key, model.base_url, **options)

    def build_request(
        self, request: ProviderRequest, *, stream: bool | None = None
    ) -> PreparedRequest:
        streaming = self.streaming if stream is None else stream
        max_tokens = request.max_output_tokens or self.max_tokens
        body = anthropic_body(request, stream=streaming, max_tokens=max_tokens)
        headers = {**self.base_headers(), "anthropic-version": API_VERSION}
        if streaming:
            headers["accept"] = "text/event-stream"
        return PreparedRequest("POST", f"{self.base_url}/messages", headers, body, streaming)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def stream_parser(self, request: ProviderRequest) -> StreamParser:
        return AnthropicStreamParser(show_reasoning=not _excluded(request))

    def parse_body(self, payload: Any, request: ProviderRequest) -> list[StreamEvent]:
        return parse_message(payload, show_reasoning=not _excluded(request))


def _excluded(request: ProviderRequest) -> bool:
    return bool(request.reasoning is not None and request.reasoning.exclude)
