"""Google Gemini (Generative Language API): ``generateContent`` and
``streamGenerateContent?alt=sse``, key in the ``x-goog-api-key`` header.

Wire notes (fixtures under /work/shared/fixtures/providers/gemini):
- roles are ``user`` / ``model``; tool results are ``functionResponse`` parts,
  all of one step in ONE user content;
- function calls arrive whole (never fragmented) and carry no id on AI Studio:
  we make one up and send it back in ``functionCall.id`` / ``functionResponse.id``;
- a function call still ends with ``finishReason: STOP``: the presence of
  ``functionCall`` parts is what makes it a tool-call finish;
- ``thoughtSignature`` strings sit on parts (the first function call of a
  batch, the answer text, or a trailing empty text part) and must be echoed on
  the same part next time (Gemini 3 requires it for function calling); they
  travel in ``provider_data["google"]``;
- each SSE event is a complete response holding only the new parts; usage is
  repeated on every event and only the last one counts; there is no ``[DONE]``:
  the event whose candidate has a ``finishReason`` is the terminal one;
- ``candidatesTokenCount`` excludes ``thoughtsTokenCount``; we report output as
  their sum (reasoning is billed as output), cached tokens are a subset of the prompt.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from runtime.providers import errors
from runtime.providers.adapter import (
    EFFORT_BUDGETS,
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
from runtime.providers.base import (
    FinishReason,
    ImageDelta,
    ProviderRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    Usage,
)
from runtime.providers.google.server_tools import GeminiToolLog, echo_parts, gemini_tools
from runtime.providers.sse import SSEEvent

FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
}


# --- request ---------------------------------------------------------------------------------


def gemini_contents(request: ProviderRequest) -> tuple[list[dict[str, Any]], list[str]]:
    """History as ``contents`` (same-role turns merged), and system texts found in it."""
    contents: list[dict[str, Any]] = []
    system_extra: list[str] = []
    names = _call_names(request.messages)
    for message in request.messages:
        role = message.get("role")
        if role == "system":
            text = content_text(message.get("content"))
            if text:
                system_extra.append(text)
        elif role == "assistant":
            _append(contents, "model", _model_parts(message))
        elif role == "tool":
            _append(contents, "user", [_function_response(message, names)])
        else:
            # An empty user turn stays as {"text": ""} (accepted, and keeps the turn order).
            parts = _user_parts(message.get("content")) or [{"text": ""}]
            _append(contents, "user", parts)
    return contents, system_extra


def _append(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": parts})


def _call_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Tool-call id → function name (a ``functionResponse`` must name its function)."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[str(call.get("id", ""))] = (call.get("function") or {}).get("name", "")
    return names


def _user_parts(content: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content_parts(content):
        if part.get("type") == "text" and part.get("text"):
            parts.append({"text": part["text"]})
            continue
        inline = _media_part(part)
        if inline is not None:
            parts.append(inline)
    return parts


def _media_part(part: dict[str, Any]) -> dict[str, Any] | None:
    """``inlineData`` for an inline image or PDF, ``fileData`` for an image URL."""
    media = image_of(part) or document_of(part)
    if media is not None and media.data is not None:
        return {"inlineData": {"mimeType": media.media_type, "data": media.data}}
    if media is not None:
        return {"fileData": {"mimeType": media.media_type, "fileUri": media.url}}
    return None


def _model_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    saved = provider_data(message, "google")
    signatures = saved.get("call_signatures") or {}
    parts: list[dict[str, Any]] = []
    text = content_text(message.get("content"))
    echoed = echo_parts(message, saved.get("parts"), text)
    if echoed is not None:  # a turn that ran code goes back exactly as it came
        return echoed
    text_signature = saved.get("text_signature")
    if text or text_signature:
        part: dict[str, Any] = {"text": text}
        if text_signature:
            part["thoughtSignature"] = text_signature
        parts.append(part)
    parts.extend(_generated_parts(message, saved.get("image_signatures") or []))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        call_id = str(call.get("id", ""))
        part = {
            "functionCall": {
                "name": function.get("name", ""),
                "args": parse_json_object(function.get("arguments")),
                "id": call_id,
            }
        }
        if signatures.get(call_id):
            part["thoughtSignature"] = signatures[call_id]
        parts.append(part)
    return parts


def _generated_parts(message: dict[str, Any], signatures: list[Any]) -> list[dict[str, Any]]:
    """The model's own generated images, each with the ``thoughtSignature`` it came with
    (Gemini 3 image models require it on the next turn)."""
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    images = [p for p in content_parts(content) if p.get("type") == "image_url"]
    for index, image in enumerate(images):
        part = _media_part(image)
        if part is None:
            continue
        if index < len(signatures) and signatures[index]:
            part["thoughtSignature"] = signatures[index]
        parts.append(part)
    return parts


def _function_response(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A ``functionResponse``; a tool's images ride in its ``parts`` (fixture
    generate_function_response_image_parts.yaml, snake_case as recorded)."""
    call_id = str(message.get("tool_call_id", ""))
    key = "error" if message.get("is_error") else "result"
    content = message.get("content")
    text = joined_text(content)
    response: dict[str, Any] = {
        "id": call_id,
        "name": message.get("name") or names.get(call_id, ""),
        "response": {key: text} if text or not isinstance(content, list) else {},
    }
    media = [m for m in map(_media_part, content_parts(content)) if m is not None]
    if media:
        response["parts"] = [
            {
                "inline_data": {
                    "mime_type": m["inlineData"]["mimeType"],
                    "data": m["inlineData"]["data"],
                }
            }
            for m in media
            if "inlineData" in m
        ]
    return {"functionResponse": response}


def tool_config(request: ProviderRequest) -> dict[str, Any] | None:
    """``toolConfig`` for a tool choice; ``None`` for ``auto`` (the API default)."""
    name = tool_choice_name(request.tool_choice)
    if name is not None:
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    mode = {"required": "ANY", "none": "NONE"}.get(str(request.tool_choice))
    return {"functionCallingConfig": {"mode": mode}} if mode else None


def thinking_config(request: ProviderRequest) -> dict[str, Any] | None:
    """``thinkingConfig``: Gemini 3 takes a level, earlier models a token budget."""
    config = request.reasoning
    if config is None:
        return None
    out: dict[str, Any] = {}
    if config.max_tokens:
        out["thinkingBudget"] = config.max_tokens
    elif config.effort and _model_family(request.model) >= 3:
        out["thinkingLevel"] = config.effort
    elif config.effort:
        out["thinkingBudget"] = EFFORT_BUDGETS[config.effort]
    out["includeThoughts"] = not config.exclude
    return out


def _model_family(model: str) -> int:
    """The major version in ``gemini-<n>…`` (0 when it cannot be read)."""
    name = model.rsplit("/", 1)[-1]
    head = name.removeprefix("gemini-").split("-")[0].split(".")[0]
    return int(head) if head.isdigit() else 0


def gemini_body(request: ProviderRequest) -> dict[str, Any]:
    """The ``generateContent`` body (the stream endpoint takes the same)."""
    contents, system_extra = gemini_contents(request)
    body: dict[str, Any] = {"contents": contents}
    system = "\n\n".join(s for s in [request.system, *system_extra] if s)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    tools: list[dict[str, Any]] = []
    if request.tools:
        declarations = [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
            for t in request.tools
        ]
        tools.append({"functionDeclarations": declarations})
        config = tool_config(request)
        if config:
            body["toolConfig"] = config
    tools += gemini_tools(request.provider_tools)
    if tools:
        body["tools"] = tools
    generation: dict[str, Any] = {}
    if request.max_output_tokens:
        generation["maxOutputTokens"] = request.max_output_tokens
    thinking = thinking_config(request)
    if thinking:
        generation["thinkingConfig"] = thinking
    if request.response_schema is not None:
        # The JSON Schema flavour (``responseJsonSchema``), not Gemini's OpenAPI subset.
        generation["responseMimeType"] = "application/json"
        generation["responseJsonSchema"] = request.response_schema
    if generation:
        body["generationConfig"] = generation
    return body


# --- response ----------------------------------------------------------------------------------


def gemini_usage(meta: Any) -> Usage:
    if not isinstance(meta, dict):
        return Usage()
    thoughts = as_int(meta.get("thoughtsTokenCount"))
    return Usage(
        input_tokens=as_int(meta.get("promptTokenCount"))
        + as_int(meta.get("toolUsePromptTokenCount")),
        output_tokens=as_int(meta.get("candidatesTokenCount")) + thoughts,
        cached_tokens=as_int(meta.get("cachedContentTokenCount")),
        reasoning_tokens=thoughts,
    )


class GeminiResponseReader:
    """Reads response objects (one for generateContent, one per SSE event) into events."""

    vendor = "Google"

    def __init__(
        self, show_reasoning: bool = True, new_id: Callable[[], str] | None = None
    ) -> None:
        self.show_reasoning = show_reasoning
        self.new_id = new_id or (lambda: f"call_{uuid.uuid4().hex[:24]}")
        self.call_signatures: dict[str, str] = {}
        self.text_signature: str | None = None
        self.image_signatures: list[str | None] = []
        self.has_calls = False
        self.finish: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.response_id: str | None = None
        self.tools = GeminiToolLog()

    def read(self, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            raise errors.malformed(self.vendor, "response is not an object")
        if isinstance(payload.get("error"), dict):
            raise errors.classify(self.vendor, None, payload["error"])
        self.usage = payload.get("usageMetadata") or self.usage
        self.model = payload.get("modelVersion") or self.model
        self.response_id = payload.get("responseId") or self.response_id
        candidates = payload.get("candidates") or []
        if not candidates:
            if (payload.get("promptFeedback") or {}).get("blockReason"):
                self.finish = "SAFETY"  # the prompt itself was blocked
            return []
        candidate = candidates[0]
        events = self._parts(((candidate.get("content") or {}).get("parts")) or [])
        events += self.tools.grounding(candidate.get("groundingMetadata"))
        if candidate.get("finishReason"):
            self.finish = candidate["finishReason"]
        return events

    def _parts(self, parts: list[Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("functionCall"), dict):
                events.extend(self._call(part))
            elif isinstance(part.get("inlineData") or part.get("inline_data"), dict):
                if not part.get("thought"):  # Gemini 3's draft "thought images" are not answers
                    events.append(self._image(part))
            elif isinstance(part.get("text"), str):
                if part.get("thought"):
                    if part["text"] and self.show_reasoning:
                        events.append(ReasoningDelta(part["text"]))
                    continue
                if part.get("thoughtSignature"):
                    self.text_signature = part["thoughtSignature"]
                if part["text"]:
                    events.append(TextDelta(part["text"]))
                self.tools.part(part)
            elif not part.get("thought"):  # executableCode, codeExecutionResult
                events.extend(self.tools.part(part))
        return events

    def _image(self, part: dict[str, Any]) -> ImageDelta:
        """A generated image; its ``thoughtSignature`` must go back on the same part."""
        inline = part.get("inlineData") or part.get("inline_data") or {}
        self.image_signatures.append(part.get("thoughtSignature"))
        return ImageDelta(
            index=len(self.image_signatures) - 1,
            media_type=str(inline.get("mimeType") or inline.get("mime_type") or "image/png"),
            data=inline.get("data"),
        )

    def _call(self, part: dict[str, Any]) -> list[StreamEvent]:
        call = part["functionCall"]
        call_id = str(call.get("id") or self.new_id())
        name = str(call.get("name", ""))
        arguments = json.dumps(call.get("args") or {})
        if part.get("thoughtSignature"):
            self.call_signatures[call_id] = part["thoughtSignature"]
        self.has_calls = True
        self.tools.part({**part, "functionCall": {**call, "id": call_id}})
        return [
            ToolCallStart(call_id, name),
            ToolCallDelta(call_id, arguments),
            ToolCallDone(call_id, name, arguments),
        ]

    def finish_event(self) -> FinishDetails:
        reason = FINISH_REASONS.get(self.finish or "", "stop")
        if self.has_calls and reason == "stop":
            reason = "tool_calls"
        data: dict[str, Any] = {}
        if self.call_signatures:
            data["call_signatures"] = dict(self.call_signatures)
        if self.text_signature:
            data["text_signature"] = self.text_signature
        if any(self.image_signatures):
            data["image_signatures"] = list(self.image_signatures)
        data.update(self.tools.provider_data())
        return FinishDetails(
            reason,
            gemini_usage(self.usage),
            provider_data={"google": data} if data else {},
            response_model=self.model,
            response_id=self.response_id,
            vendor_finish_reason=self.finish,
        )


class GeminiStreamParser:
    """``alt=sse`` events → events; the event carrying a ``finishReason`` is terminal."""

    def __init__(self, reader: GeminiResponseReader) -> None:
        self.reader = reader

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        return self.reader.read(load_event_json(self.reader.vendor, event))

    def close(self) -> list[StreamEvent]:
        if self.reader.finish is None:
            raise errors.incomplete_stream(self.reader.vendor, "a finishReason")
        return [self.reader.finish_event()]


# --- the adapter -------------------------------------------------------------------------------


class GoogleProvider(HTTPAdapter):
    """Gemini over an injected ``httpx.AsyncClient``."""

    name = "google"
    vendor = "Google"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    key_env = "GOOGLE_API_KEY"

    def build_request(
        self, request: ProviderRequest, *, stream: bool | None = None
    ) -> PreparedRequest:
        streaming = self.streaming if stream is None else stream
        model = request.model.removeprefix("models/")
        action = "streamGenerateContent?alt=sse" if streaming else "generateContent"
        headers = self.base_headers()
        if streaming:
            headers["accept"] = "text/event-stream"
        url = f"{self.base_url}/models/{model}:{action}"
        return PreparedRequest("POST", url, headers, gemini_body(request), streaming)

    def auth_headers(self, key: str) -> dict[str, str]:
        # A header, not ?key=: URLs end up in logs and exception texts.
        return {"x-goog-api-key": key}

    def stream_parser(self, request: ProviderRequest) -> StreamParser:
        return GeminiStreamParser(GeminiResponseReader(show_reasoning=not _excluded(request)))

    def parse_body(self, payload: Any, request: ProviderRequest) -> list[StreamEvent]:
        reader = GeminiResponseReader(show_reasoning=not _excluded(request))
        return [*reader.read(payload), reader.finish_event()]


def _excluded(request: ProviderRequest) -> bool:
    return bool(request.reasoning is not None and request.reasoning.exclude)
