"""OpenAI Chat Completions (``POST {base}/chat/completions``).

The API of OpenAI models whose definition has no ``api`` (or ``api: "chat"``); the
Responses API has its own adapter (``openai_responses``). The chat dialect is also the
engine's neutral message format and OpenRouter's (one parser for both). Chat Completions
never returns reasoning text or encrypted reasoning items. Search models
(``*-search-preview``) take ``web_search_options`` and answer with ``url_citation``
annotations (``CitationsFound``). See docs/providers.md.

Wire notes (fixtures under /work/shared/fixtures/providers/openai):
- streaming tool-call fragments are keyed by ``tool_calls[].index``; the id and
  name come only in the first fragment;
- with ``stream_options.include_usage`` the usage arrives in an extra chunk with
  ``choices: []`` just before ``data: [DONE]``; ``[DONE]`` is the terminal event;
- an error can arrive as a data chunk ``{"error": {...}}`` mid-stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from runtime.core.provider_tools import CitationsFound
from runtime.providers import errors
from runtime.providers.adapter import (
    FinishDetails,
    HTTPAdapter,
    PreparedRequest,
    StreamParser,
    as_int,
    content_parts,
    is_media_part,
    joined_text,
    load_event_json,
    schema_name,
    strict_compatible,
    tool_choice_name,
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
    ToolSchema,
    Usage,
)
from runtime.providers.openai.offers import chat_web_search_options
from runtime.providers.openai.tool_items import citations
from runtime.providers.sse import SSEEvent

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",
}


# --- request ---------------------------------------------------------------------------------


def chat_messages(request: ProviderRequest) -> list[dict[str, Any]]:
    """System prompt plus history in Chat Completions shape (unknown keys dropped)."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    out.extend(chat_history(request.messages, chat_message))
    return out


def chat_history(
    messages: list[dict[str, Any]], shape: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Messages shaped one by one, with tool images moved to follow-up user messages.

    Chat Completions has no image inside a ``role: tool`` message: the tool message
    keeps the text, and the images follow in a user message that says which call
    they came from (fixtures ``*_tool_image_followup_user.yaml``), placed after the
    batch's last tool message (a user message may not split a batch of results).
    """
    out: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "tool" and held:
            out.extend(held)
            held = []
        out.append(shape(message))
        if message.get("role") == "tool":
            follow_up = tool_images_message(message)
            if follow_up is not None:
                held.append(follow_up)
    out.extend(held)
    return out


def tool_images_message(message: dict[str, Any]) -> dict[str, Any] | None:
    """The user message carrying a tool result's images, or ``None`` when it has none."""
    media = [chat_part(p) for p in content_parts(message.get("content")) if is_media_part(p)]
    if not media:
        return None
    # The wording of the recorded OpenRouter exchange (the model understood it).
    intro = {
        "type": "text",
        "text": f"Attachments from tool call {message.get('tool_call_id', '')}:",
    }
    return {"role": "user", "content": [intro, *media]}


def chat_message(message: dict[str, Any]) -> dict[str, Any]:
    """One neutral message as OpenAI expects it."""
    role = message.get("role", "user")
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.get("tool_call_id", ""),
            "content": joined_text(message.get("content")),
        }
    if role == "assistant":
        content = message.get("content")
        if isinstance(content, list):  # generated images cannot be sent back here
            content = joined_text(content, media_as_text=True) or None
        out: dict[str, Any] = {"role": "assistant", "content": content}
        if message.get("tool_calls"):
            out["tool_calls"] = [_tool_call(c) for c in message["tool_calls"]]
        return out
    return {"role": role, "content": _user_content(message.get("content"))}


def _user_content(content: Any) -> Any:
    if content is None or isinstance(content, str):
        return content or ""
    return [chat_part(p) for p in content_parts(content)]


def chat_part(part: dict[str, Any]) -> dict[str, Any]:
    """One content part with only the keys Chat Completions defines (``text``,
    ``image_url``, ``file``); anything else becomes its text."""
    kind = part.get("type")
    if kind == "image_url":
        spec = part.get("image_url")
        url = spec.get("url") if isinstance(spec, dict) else spec
        image: dict[str, Any] = {"url": url}
        if isinstance(spec, dict) and spec.get("detail"):
            image["detail"] = spec["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "file" and isinstance(part.get("file"), dict):
        file = {k: v for k, v in part["file"].items() if k in ("file_data", "file_id", "filename")}
        return {"type": "file", "file": file}
    return {"type": "text", "text": str(part.get("text") or "")}


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "id": call.get("id", ""),
        "type": "function",
        "function": {
            "name": function.get("name", ""),
            "arguments": function.get("arguments") or "{}",
        },
    }


def chat_tools(tools: Iterable[ToolSchema]) -> list[dict[str, Any]]:
    """Tools as ``{"type": "function", "function": {name, description, parameters}}``."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def chat_tool_choice(choice: Any) -> Any:
    """``auto`` / ``none`` / ``required`` as they are; a named tool as a function choice."""
    name = tool_choice_name(choice)
    if name is not None:
        return {"type": "function", "function": {"name": name}}
    return choice if choice in ("auto", "none", "required") else "auto"


def chat_response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """Structured output as Chat Completions takes it (OpenAI and OpenRouter alike)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": schema_name(schema),
            "schema": schema,
            # Strict mode refuses schemas with optional or open properties: ask for it
            # only when the schema already meets its rules (the answer is checked anyway).
            "strict": strict_compatible(schema),
        },
    }


def chat_body(request: ProviderRequest, *, stream: bool) -> dict[str, Any]:
    """The Chat Completions body shared by OpenAI and OpenRouter."""
    body: dict[str, Any] = {"model": request.model, "messages": chat_messages(request)}
    if request.tools:
        body["tools"] = chat_tools(request.tools)
        body["tool_choice"] = chat_tool_choice(request.tool_choice)
        # Only sent when the prompt sets it (reference §4.8): the vendor default otherwise.
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_schema is not None:
        body["response_format"] = chat_response_format(request.response_schema)
    if request.max_output_tokens:
        # ``max_tokens`` is deprecated on OpenAI and refused by reasoning models.
        body["max_completion_tokens"] = request.max_output_tokens
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


# --- response ----------------------------------------------------------------------------------


def chat_usage(usage: Any) -> Usage:
    """``prompt_tokens`` (cached tokens are a subset) and ``completion_tokens`` (reasoning included)."""
    return token_usage(usage, "prompt_tokens", "completion_tokens")


def token_usage(usage: Any, input_key: str, output_key: str) -> Usage:
    """OpenAI usage under either API's names: ``<input_key>`` with its ``_details.cached_tokens``
    and ``<output_key>`` with its ``_details.reasoning_tokens`` (Chat: prompt/completion
    tokens, Responses: input/output tokens)."""
    if not isinstance(usage, dict):
        return Usage()
    input_details = usage.get(f"{input_key}_details") or {}
    output_details = usage.get(f"{output_key}_details") or {}
    return Usage(
        input_tokens=as_int(usage.get(input_key)),
        output_tokens=as_int(usage.get(output_key)),
        cached_tokens=as_int(input_details.get("cached_tokens")),
        reasoning_tokens=as_int(output_details.get("reasoning_tokens")),
    )


def finish_reason(raw: str | None, has_tool_calls: bool) -> FinishReason:
    """The engine's finish reason; tool calls win over a vendor that says ``stop``."""
    reason = FINISH_REASONS.get(raw or "", "stop")
    if has_tool_calls and reason == "stop":
        return "tool_calls"
    return reason


@dataclass(slots=True)
class _PendingCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Chat-completions tool-call fragments, keyed by ``index`` (parallel calls included)."""

    def __init__(self) -> None:
        self.calls: dict[int, _PendingCall] = {}

    def feed(self, fragments: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for position, fragment in enumerate(fragments or []):
            if not isinstance(fragment, dict):
                continue
            index = fragment.get("index", position)
            function = fragment.get("function") or {}
            call = self.calls.get(index)
            if call is None:
                call = _PendingCall(
                    str(fragment.get("id") or f"call_{index}"), function.get("name") or ""
                )
                self.calls[index] = call
                events.append(ToolCallStart(call.id, call.name))
            piece = function.get("arguments")
            if piece:
                call.arguments.append(piece)
                events.append(ToolCallDelta(call.id, piece))
        return events

    def done(self) -> list[StreamEvent]:
        return [
            ToolCallDone(c.id, c.name, "".join(c.arguments) or "{}")
            for _, c in sorted(self.calls.items())
        ]


class ChatStreamParser:
    """Chat Completions SSE chunks → events; ``[DONE]`` is the terminal event."""

    vendor = "OpenAI"

    def __init__(self) -> None:
        self.calls = ToolCallAssembler()
        self.finish: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.response_id: str | None = None
        self.done = False

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        if event.data.strip() == "[DONE]":
            self.done = True
            return []
        chunk = load_event_json(self.vendor, event)
        if not isinstance(chunk, dict):
            raise errors.malformed(self.vendor, "stream chunk is not an object")
        if isinstance(chunk.get("error"), dict):
            raise errors.classify(self.vendor, None, chunk["error"])
        self.model = chunk.get("model") or self.model
        self.response_id = chunk.get("id") or self.response_id
        self.on_chunk(chunk)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                events.extend(self.choice(choice))
        return events

    def choice(self, choice: dict[str, Any]) -> list[StreamEvent]:
        """Events of one ``choices[0]`` delta; a null finish never overwrites a real one."""
        delta = choice.get("delta") or {}
        events: list[StreamEvent] = []
        events.extend(self.extra_delta(delta))
        if delta.get("content"):
            events.append(TextDelta(delta["content"]))
        if delta.get("refusal"):
            events.append(TextDelta(delta["refusal"]))
        events.extend(self.calls.feed(delta.get("tool_calls")))
        if choice.get("finish_reason"):
            self.finish = choice["finish_reason"]
        return events

    def on_chunk(self, chunk: dict[str, Any]) -> None:
        """Hook for dialects with more top-level chunk fields (OpenRouter's ``provider``)."""

    def extra_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        """Hook for dialects with more delta fields (OpenRouter's reasoning)."""
        return []

    def close(self) -> list[StreamEvent]:
        if not self.done:
            raise errors.incomplete_stream(self.vendor, "data: [DONE]")
        return [*self.calls.done(), self.finish_event()]

    def finish_event(self) -> FinishDetails:
        return FinishDetails(
            finish_reason(self.finish, bool(self.calls.calls)),
            chat_usage(self.usage),
            response_model=self.model,
            response_id=self.response_id,
            vendor_finish_reason=self.finish,
        )


def parse_chat_completion(vendor: str, payload: Any) -> tuple[list[StreamEvent], dict[str, Any]]:
    """Events of a complete chat completion, and its ``choices[0].message``."""
    if not isinstance(payload, dict):
        raise errors.malformed(vendor, "the body is not an object")
    if isinstance(payload.get("error"), dict):
        raise errors.classify(vendor, None, payload["error"])
    choices = payload.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        # Not a completion at all (a proxy's page, another endpoint's body): never an
        # empty success.
        raise errors.malformed(vendor, "the answer has no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    events: list[StreamEvent] = []
    if message.get("reasoning"):
        events.append(ReasoningDelta(message["reasoning"]))
    if message.get("content"):
        events.append(TextDelta(message["content"]))
    if message.get("refusal"):
        events.append(TextDelta(message["refusal"]))
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    for call in calls:
        function = call.get("function") or {}
        call_id, name = str(call.get("id") or ""), function.get("name") or ""
        arguments = function.get("arguments") or "{}"
        events += [ToolCallStart(call_id, name), ToolCallDelta(call_id, arguments)]
        events.append(ToolCallDone(call_id, name, arguments))
    raw_finish = choice.get("finish_reason")
    events.append(
        FinishDetails(
            finish_reason(raw_finish, bool(calls)),
            chat_usage(payload.get("usage")),
            response_model=payload.get("model"),
            response_id=payload.get("id"),
            vendor_finish_reason=raw_finish,
        )
    )
    return events, message


# --- the adapter -------------------------------------------------------------------------------


class OpenAIProvider(HTTPAdapter):
    """OpenAI Chat Completions over an injected ``httpx.AsyncClient``."""

    name = "openai"
    vendor = "OpenAI"
    default_base_url = "https://api.openai.com/v1"
    key_env = "OPENAI_API_KEY"

    def build_request(
        self, request: ProviderRequest, *, stream: bool | None = None
    ) -> PreparedRequest:
        streaming = self.streaming if stream is None else stream
        body = chat_body(request, stream=streaming)
        if request.reasoning is not None and request.reasoning.effort:
            body["reasoning_effort"] = request.reasoning.effort
        search = chat_web_search_options(request.provider_tools)
        if search is not None:  # search models only (runtime.providers.openai.offers)
            body["web_search_options"] = search
        headers = self.base_headers()
        if streaming:
            headers["accept"] = "text/event-stream"
        return PreparedRequest(
            "POST", f"{self.base_url}/chat/completions", headers, body, streaming
        )

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def stream_parser(self, request: ProviderRequest) -> StreamParser:
        return SearchChatStreamParser()

    def parse_body(self, payload: Any, request: ProviderRequest) -> list[StreamEvent]:
        events, message = parse_chat_completion(self.vendor, payload)
        found = citations(message.get("annotations"), str(message.get("content") or ""), 0)
        if found:  # before the Finish, which stays last
            events.insert(len(events) - 1, CitationsFound(found))
        return events


class SearchChatStreamParser(ChatStreamParser):
    """OpenAI chat chunks plus a search model's ``delta.annotations`` (``url_citation``,
    offsets into the whole content) as ``CitationsFound``."""

    def __init__(self) -> None:
        super().__init__()
        self.content: list[str] = []

    def extra_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        if delta.get("content"):
            self.content.append(delta["content"])
        found = citations(delta.get("annotations"), "".join(self.content), 0)
        return [CitationsFound(found)] if found else []
