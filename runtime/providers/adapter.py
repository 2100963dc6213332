"""What every HTTP adapter shares: building, sending, status handling, stream plumbing.

An adapter is three pure parts plus this shell:
- ``build_request(request) -> PreparedRequest``: the exact URL, headers and JSON
  body the vendor gets, *without* credentials (the engine stores it on the log);
- a stream parser (SSE events → ``StreamEvent``s, and a check that the vendor's
  terminal event arrived);
- a body parser for non-streaming responses.
``HTTPAdapter.stream`` adds the key at send time only, so no object that can be
logged, printed or repr'd ever holds it.

Messages arrive in the engine's neutral (OpenAI chat) shape; an assistant
message may carry ``provider_data`` (what ``FinishDetails.provider_data`` gave
back for it) so vendor-specific state such as thinking signatures round-trips.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import httpx
import orjson

from runtime.core.spec import ModelDefinition
from runtime.providers import errors
from runtime.providers.base import Finish, ProviderError, ProviderRequest, StreamEvent
from runtime.providers.sse import SSEEvent, aiter_sse

KeyResolver = Callable[[ProviderRequest], Awaitable[str | None]]
ApiKey = str | KeyResolver | None


@dataclass(slots=True)
class FinishDetails(Finish):
    """``Finish`` plus what the adapter learned that ``base.Finish`` has no field for.

    ``provider_data`` must be stored with the assistant message and sent back as
    its ``provider_data`` key (Anthropic thinking blocks with signatures, Gemini
    thought signatures, OpenRouter ``reasoning_details``). The rest is for the
    log: the model and upstream that actually served, the vendor's own finish
    reason, and a vendor-reported cost (OpenRouter ``usage.cost``).
    """

    provider_data: dict[str, Any] = field(default_factory=dict)
    response_model: str | None = None
    response_id: str | None = None
    served_by: str | None = None
    vendor_finish_reason: str | None = None
    reported_cost: float | None = None


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """One vendor request as it goes on the wire, minus credentials."""

    method: str
    url: str
    headers: dict[str, str]
    body: dict[str, Any]
    stream: bool

    def dump(self) -> dict[str, Any]:
        """JSON-ready copy for the request log."""
        return {"method": self.method, "url": self.url, "headers": self.headers, "body": self.body}


class StreamParser(Protocol):
    """Turns a vendor's SSE events into stream events."""

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        """Events for one SSE event; raises ``AdapterError`` on an in-stream error."""
        ...

    def close(self) -> list[StreamEvent]:
        """The byte stream ended: the closing events (tool calls done, ``Finish``).

        Raises ``AdapterError`` when the vendor's terminal event never arrived.
        """
        ...


class HTTPAdapter:
    """Base class of the vendor adapters (a ``runtime.providers.base.Provider``)."""

    name: str = ""  # an instance attribute for the Provider protocol
    vendor: ClassVar[str] = ""  # human name used in error messages
    default_base_url: ClassVar[str] = ""
    key_env: ClassVar[str] = ""

    def __init__(
        self,
        client: httpx.AsyncClient,
        api_key: ApiKey,
        base_url: str | None = None,
        *,
        stream: bool = True,
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
    ) -> None:
        self._client = client
        self._api_key = api_key
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.streaming = stream
        self.extra_headers = dict(headers or {})
        self.timeout = timeout

    def __repr__(self) -> str:
        # Never the key: only what identifies the endpoint.
        return f"{type(self).__name__}(base_url={self.base_url!r}, stream={self.streaming})"

    @classmethod
    def for_model(
        cls, model: ModelDefinition, *, client: httpx.AsyncClient, api_key: ApiKey, **options: Any
    ) -> HTTPAdapter:
        """The adapter for a model definition (its ``base_url``, routing options)."""
        return cls(client, api_key, model.base_url, **options)

    # --- the vendor-specific parts -----------------------------------------------------

    def build_request(
        self, request: ProviderRequest, *, stream: bool | None = None
    ) -> PreparedRequest:
        """The exact request for ``request`` (no credentials)."""
        raise NotImplementedError

    def auth_headers(self, key: str) -> dict[str, str]:
        """Headers carrying the key (added at send time only)."""
        raise NotImplementedError

    def stream_parser(self, request: ProviderRequest) -> StreamParser:
        """A fresh parser for one streamed response."""
        raise NotImplementedError

    def parse_body(self, payload: Any, request: ProviderRequest) -> list[StreamEvent]:
        """Events for a complete (non-streamed) response body."""
        raise NotImplementedError

    # --- the shell -----------------------------------------------------------------------

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request``; yield its events as they arrive, ending with one ``Finish``."""
        prepared = self.build_request(request)
        key = await self._resolve_key(request)
        response = await self._open(prepared, key)
        failure: errors.AdapterError | None = None
        try:
            async for event in self._events(response, prepared, request):
                yield event
        except httpx.HTTPError as exc:
            failure = errors.from_transport(self.vendor, exc, (key,))
        except errors.AdapterError as exc:
            # A vendor's error event mid-stream is classified by a parser without the key.
            errors.scrub(exc, (key,))
            raise
        finally:
            await response.aclose()
        # Raised outside the handler so the error has no __context__: httpx errors hold
        # the request, and the request holds the key.
        if failure is not None:
            raise failure

    async def _open(self, prepared: PreparedRequest, key: str) -> httpx.Response:
        """Send the request; a non-2xx answer becomes a classified ``AdapterError``."""
        failure: errors.AdapterError | None = None
        try:
            response = await self._send(prepared, key)
            if response.status_code >= 400:
                body = await response.aread()
                await response.aclose()
                failure = errors.from_response(
                    self.vendor, response.status_code, body, response.headers, (key,)
                )
        except httpx.HTTPError as exc:
            failure = errors.from_transport(self.vendor, exc, (key,))
        if failure is not None:
            raise failure
        return response

    async def _events(
        self, response: httpx.Response, prepared: PreparedRequest, request: ProviderRequest
    ) -> AsyncIterator[StreamEvent]:
        if not prepared.stream:
            for event in self.parse_body(await self._read_json(response), request):
                yield event
            return
        parser = self.stream_parser(request)
        async for sse in aiter_sse(response.aiter_bytes()):
            for event in parser.feed(sse):
                yield event
        for event in parser.close():
            yield event

    async def _read_json(self, response: httpx.Response) -> Any:
        body = await response.aread()
        try:
            return json.loads(body)
        except ValueError:
            raise errors.malformed(self.vendor, "the body is not JSON") from None

    async def _send(self, prepared: PreparedRequest, key: str) -> httpx.Response:
        headers = {**prepared.headers, **self.auth_headers(key)}
        outgoing = self._client.build_request(
            prepared.method,
            prepared.url,
            headers=headers,
            content=encode_body(prepared.body),
            timeout=self.timeout if self.timeout is not None else httpx.USE_CLIENT_DEFAULT,
        )
        return await self._client.send(outgoing, stream=True)

    async def _resolve_key(self, request: ProviderRequest) -> str:
        source = self._api_key
        key = source if isinstance(source, str) or source is None else await source(request)
        if not key:
            raise errors.AdapterError(
                f"No API key found for provider: {self.name}. Set {self.key_env} "
                "(thread, agent, prompt, user or instance env, or the process environment).",
                errors.AUTHENTICATION,
            )
        return key

    def base_headers(self) -> dict[str, str]:
        """Headers every request of this adapter sends (no credentials)."""
        return {
            "content-type": "application/json",
            "accept": "application/json",
            **self.extra_headers,
        }


def schema_name(schema: dict[str, Any]) -> str:
    """A name for a response schema where the vendor wants one (its title, or ``response``)."""
    title = schema.get("title")
    name = re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64] if isinstance(title, str) else ""
    return name or "response"


def strict_compatible(schema: Any) -> bool:
    """Whether every object in ``schema`` is closed and requires all its properties
    (what OpenAI's strict structured output demands)."""
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or []) != set(properties):
            return False
    return all(
        strict_compatible(v)
        for k, v in schema.items()
        if k not in ("required", "enum", "const", "default", "examples")
    )


def encode_body(body: dict[str, Any]) -> bytes:
    """The JSON bytes of a request body. orjson: a body with ten inline images is
    megabytes of base64, which the standard library escapes about ten times slower."""
    try:
        return orjson.dumps(body)
    except TypeError:  # a value orjson does not take (e.g. a non-string key)
        return json.dumps(body).encode()


def wire_request(provider: object, request: ProviderRequest) -> dict[str, Any] | None:
    """What ``provider`` would send for ``request`` (method, URL, headers, body) for the
    request log: keys excluded (they are added at send time only), inline base64 data
    replaced by a size note. ``None`` for providers without a wire format (``test``)."""
    build = getattr(provider, "build_request", None)
    if build is None:
        return None
    try:
        prepared = build(request)
    except ProviderError:
        return None  # a request the adapter refuses: the attempt itself fails with the reason
    if not isinstance(prepared, PreparedRequest):
        return None
    dumped: dict[str, Any] = strip_inline_data(prepared.dump())
    return dumped


# Keys whose string value is raw base64 when their object says so: Anthropic
# ``source: {type: base64, data}``, Gemini ``inlineData: {mimeType, data}``.
_INLINE_MARKERS = ("media_type", "mimeType", "mime_type")


def strip_inline_data(value: Any) -> Any:
    """A JSON value with inline base64 payloads (data URLs, Anthropic base64 sources, Gemini
    ``inlineData``, Responses ``image_generation_call.result``) replaced by
    ``[base64: N chars]``: logs stay small.

    ``value`` itself when it holds none: every request log passes through here and holds
    the whole history, so one orjson pass decides whether the Python walk is needed."""
    try:
        dumped = orjson.dumps(value)
    except TypeError:
        return _strip(value)
    if any(marker in dumped for marker in _INLINE_SIGNS):
        return _strip(value)
    return value


# What any payload ``_strip`` replaces shows in the JSON text: a "data" key, a data URL, or
# a generated image.
_INLINE_SIGNS = (b'"data"', b'"data:', b"image_generation_call")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        inline = isinstance(value.get("data"), str) and (
            value.get("type") == "base64" or any(k in value for k in _INLINE_MARKERS)
        )
        # An OpenAI Responses ``image_generation_call`` sent back holds its image as ``result``.
        generated = value.get("type") == "image_generation_call"
        return {
            k: _base64_note(v)
            if (inline and k == "data") or (generated and k == "result" and isinstance(v, str))
            else _strip(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, str) and value.startswith("data:") and ";base64," in value[:200]:
        header, _, data = value.partition(",")
        return f"{header},{_base64_note(data)}"
    return value


def _base64_note(data: str) -> str:
    return f"[base64: {len(data)} chars]"


# --- shared helpers for the request builders -------------------------------------------------


def parse_json_object(raw: str | None) -> dict[str, Any]:
    """Tool-call arguments as an object (vendors that want objects, not strings).

    A model can emit broken JSON; the call then already failed in the engine, and
    sending ``{}`` back keeps the history valid.
    """
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def content_parts(content: Any) -> list[dict[str, Any]]:
    """A neutral message content as OpenAI-style parts (``text`` / ``image_url``)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [p for p in content if isinstance(p, dict)]


def content_text(content: Any) -> str:
    """The text of a neutral content (parts concatenated, images dropped)."""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content_parts(content) if p.get("type") == "text")


@dataclass(frozen=True, slots=True)
class Image:
    """An image part: inline base64 data or a URL."""

    media_type: str
    data: str | None = None
    url: str | None = None


def image_of(part: dict[str, Any]) -> Image | None:
    """The image of an ``image_url`` part (data URLs decoded into media type + base64)."""
    if part.get("type") != "image_url":
        return None
    spec = part.get("image_url")
    url = spec.get("url") if isinstance(spec, dict) else spec
    if not isinstance(url, str) or not url:
        return None
    if url.startswith("data:"):
        header, _, data = url[5:].partition(",")
        media_type = header.split(";")[0] or "application/octet-stream"
        if ";base64" not in header:
            data = base64.b64encode(data.encode()).decode()
        return Image(media_type, data=data)
    guessed = mimetypes.guess_type(url.split("?")[0])[0] or "image/jpeg"
    return Image(guessed, url=url)


def document_of(part: dict[str, Any]) -> Image | None:
    """The document of a ``file`` part (``{file: {file_data: data URL, filename}}``)."""
    if part.get("type") != "file" or not isinstance(part.get("file"), dict):
        return None
    data = part["file"].get("file_data")
    if not isinstance(data, str) or not data.startswith("data:"):
        return None
    header, _, encoded = data[5:].partition(",")
    return Image(header.split(";")[0] or "application/pdf", data=encoded)


def is_media_part(part: Any) -> bool:
    """An image or document part (what a tool result or assistant message may carry)."""
    return isinstance(part, dict) and part.get("type") in ("image_url", "file")


def media_name(part: dict[str, Any]) -> str:
    """The file name of a media part (its attachment's name), for text stand-ins."""
    ref = part.get("attachment")
    if isinstance(ref, dict) and ref.get("name"):
        return str(ref["name"])
    file = part.get("file")
    if isinstance(file, dict) and file.get("filename"):
        return str(file["filename"])
    return "image"


def joined_text(content: Any, *, media_as_text: bool = False) -> str:
    """The text parts of a content joined by blank lines; with ``media_as_text``, images
    and documents become ``[Image: name]`` (where the vendor cannot take them there)."""
    if isinstance(content, str) or content is None:
        return content or ""
    texts: list[str] = []
    for part in content_parts(content):
        if part.get("type") == "text" and part.get("text"):
            texts.append(str(part["text"]))
        elif media_as_text and is_media_part(part):
            kind = "Document" if part.get("type") == "file" else "Image"
            texts.append(f"[{kind}: {media_name(part)}]")
    return "\n\n".join(texts)


def provider_data(message: dict[str, Any], vendor: str) -> dict[str, Any]:
    """The round-trip data an assistant message carries for ``vendor`` (empty when none)."""
    data = message.get("provider_data")
    if isinstance(data, dict) and isinstance(data.get(vendor), dict):
        return data[vendor]
    return {}


def tool_choice_name(choice: Any) -> str | None:
    """The forced tool of a dict tool choice (``{"name"}``, ``{"function": {"name"}}`` …)."""
    if not isinstance(choice, dict):
        return None
    if isinstance(choice.get("name"), str):
        return choice["name"]
    function = choice.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return function["name"]
    return None


def as_int(value: Any) -> int:
    """A token count from a vendor payload (missing / null → 0)."""
    return value if isinstance(value, int) else 0


def load_event_json(vendor: str, event: SSEEvent) -> Any:
    """The JSON of one SSE data payload; malformed data is an error, never skipped."""
    try:
        return json.loads(event.data)
    except ValueError:
        raise errors.malformed(vendor, f"stream event is not JSON: {event.data[:80]!r}") from None


# Effort → thinking-token budget for vendors that want a number (Anthropic, Gemini 2.x).
# Anthropic's minimum budget is 1024; the others are our choice (roughly 4× apart).
EFFORT_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
