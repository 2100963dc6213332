"""OpenRouter: OpenAI-compatible Chat Completions plus routing and reasoning extras.

Differences from OpenAI that matter here (fixtures under .../openrouter):
- ``includedProviders`` on the model definition becomes
  ``provider: {"order": [...], "allow_fallbacks": false}``: try those upstreams
  in that order and no others (OpenRouter's provider-routing docs);
- reasoning is requested with ``reasoning: {effort | max_tokens, exclude}`` (or
  ``{"enabled": true}``) and streamed as ``delta.reasoning`` text plus
  ``delta.reasoning_details`` items, which must be sent back unchanged on the
  assistant message to keep reasoning across turns (signatures included);
- the usage chunk comes *after* the finish chunk and still has a ``choices[0]``
  whose ``finish_reason`` is null; ``usage.cost`` is the billed cost;
- an error mid-stream is a chunk with a top-level ``error`` (HTTP status 200);
- ``: OPENROUTER PROCESSING`` comment lines are keep-alives;
- ``provider:web_search`` is its ``openrouter:web_search`` server tool; the pages come
  back as ``url_citation`` annotations (``runtime.providers.openrouter.server_tools``).
"""

from __future__ import annotations

from typing import Any

import httpx

from runtime.core.spec import ModelDefinition
from runtime.providers.adapter import (
    ApiKey,
    FinishDetails,
    HTTPAdapter,
    PreparedRequest,
    StreamParser,
    image_of,
    provider_data,
)
from runtime.providers.base import ImageDelta, ProviderRequest, ReasoningDelta, StreamEvent
from runtime.providers.openai.chat_completions import (
    ChatStreamParser,
    chat_body,
    chat_history,
    chat_message,
    parse_chat_completion,
)
from runtime.providers.openrouter.server_tools import Annotations, openrouter_tools


def routing(included_providers: list[str] | None) -> dict[str, Any] | None:
    """The ``provider`` routing object for a model's ``includedProviders``."""
    if not included_providers:
        return None
    return {"order": list(included_providers), "allow_fallbacks": False}


def reasoning_body(request: ProviderRequest) -> dict[str, Any] | None:
    """``reasoning`` as OpenRouter wants it: one of effort / max_tokens, plus exclude."""
    config = request.reasoning
    if config is None:
        return None
    out: dict[str, Any] = {}
    if config.effort:
        out["effort"] = config.effort
    elif config.max_tokens:
        out["max_tokens"] = config.max_tokens
    if config.exclude is not None:
        out["exclude"] = config.exclude
    if not out or (config.include and "effort" not in out and "max_tokens" not in out):
        out["enabled"] = True
    return out


def openrouter_messages(request: ProviderRequest) -> list[dict[str, Any]]:
    """Chat messages with each assistant turn's ``reasoning_details`` restored."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    out.extend(chat_history(request.messages, _shaped))
    return out


def _shaped(message: dict[str, Any]) -> dict[str, Any]:
    shaped = chat_message(message)
    details = provider_data(message, "openrouter").get("reasoning_details")
    if shaped["role"] == "assistant" and details:
        shaped["reasoning_details"] = details
    return shaped


class ReasoningDetails:
    """Merges streamed ``reasoning_details`` fragments into the items to send back.

    Fragments of one item share ``type`` and ``index``: text and summaries are
    concatenated, a late fragment carries the signature (fixture
    chat_stream_reasoning.sse), encrypted items arrive whole.
    """

    def __init__(self) -> None:
        self.items: dict[tuple[str, int], dict[str, Any]] = {}

    def feed(self, fragments: Any) -> None:
        for fragment in fragments if isinstance(fragments, list) else []:
            if not isinstance(fragment, dict):
                continue
            key = (str(fragment.get("type", "")), int(fragment.get("index") or 0))
            item = self.items.setdefault(key, {})
            for name, value in fragment.items():
                if name in ("text", "summary") and isinstance(value, str):
                    item[name] = item.get(name, "") + value
                elif value not in (None, "") or name not in item:
                    item[name] = value

    def result(self) -> list[dict[str, Any]]:
        return list(self.items.values())


class GeneratedImages:
    """``message.images`` / ``delta.images`` (image output models): each item is
    ``{type: "image_url", image_url: {url: data URL}}``, numbered in arrival order."""

    def __init__(self) -> None:
        self.count = 0

    def feed(self, items: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for item in items if isinstance(items, list) else []:
            image = image_of(item) if isinstance(item, dict) else None
            if image is None:
                continue
            events.append(ImageDelta(self.count, image.media_type, image.data, image.url))
            self.count += 1
        return events


class OpenRouterStreamParser(ChatStreamParser):
    """The chat parser plus reasoning deltas, ``reasoning_details`` and ``usage.cost``."""

    vendor = "OpenRouter"

    def __init__(self, show_reasoning: bool = True) -> None:
        super().__init__()
        self.details = ReasoningDetails()
        self.images = GeneratedImages()
        self.served_by: str | None = None
        self.show_reasoning = show_reasoning
        self.annotations = Annotations()

    def on_chunk(self, chunk: dict[str, Any]) -> None:
        self.served_by = chunk.get("provider") or self.served_by

    def extra_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        self.details.feed(delta.get("reasoning_details"))
        self.annotations.feed(delta.get("annotations"))
        events: list[StreamEvent] = []
        if delta.get("reasoning") and self.show_reasoning:
            events.append(ReasoningDelta(delta["reasoning"]))
        events.extend(self.images.feed(delta.get("images")))
        return events

    def finish_event(self) -> FinishDetails:
        finish = super().finish_event()
        return _with_extras(finish, self.usage, self.details.result(), self.served_by)

    def close(self) -> list[StreamEvent]:
        events = super().close()
        events[-1:-1] = self.annotations.events(self.response_id, self.usage)
        return events


def _with_extras(
    finish: FinishDetails, usage: Any, details: list[dict[str, Any]], served_by: str | None
) -> FinishDetails:
    if details:
        finish.provider_data = {"openrouter": {"reasoning_details": details}}
    finish.served_by = served_by
    cost = usage.get("cost") if isinstance(usage, dict) else None
    finish.reported_cost = float(cost) if isinstance(cost, int | float) else None
    return finish


class OpenRouterProvider(HTTPAdapter):
    """OpenRouter chat completions with provider routing and reasoning details."""

    name = "openrouter"
    vendor = "OpenRouter"
    default_base_url = "https://openrouter.ai/api/v1"
    key_env = "OPENROUTER_API_KEY"

    def __init__(
        self,
        client: httpx.AsyncClient,
        api_key: ApiKey,
        base_url: str | None = None,
        *,
        included_providers: list[str] | None = None,
        app_url: str | None = None,
        app_title: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client, api_key, base_url, **options)
        self.included_providers = list(included_providers or [])
        # Optional app attribution (OpenRouter rankings): HTTP-Referer and X-Title.
        if app_url:
            self.extra_headers.setdefault("HTTP-Referer", app_url)
        if app_title:
            self.extra_headers.setdefault("X-Title", app_title)

    @classmethod
    def for_model(
        cls, model: ModelDefinition, *, client: httpx.AsyncClient, api_key: ApiKey, **options: Any
    ) -> HTTPAdapter:
        return cls(
            client, api_key, model.base_url, included_providers=model.included_providers, **options
        )

    def __repr__(self) -> str:
        return (
            f"OpenRouterProvider(base_url={self.base_url!r}, stream={self.streaming}, "
            f"included_providers={self.included_providers!r})"
        )

    def build_request(
        self, request: ProviderRequest, *, stream: bool | None = None
    ) -> PreparedRequest:
        streaming = self.streaming if stream is None else stream
        body = chat_body(request, stream=streaming)
        body["messages"] = openrouter_messages(request)
        server_tools = openrouter_tools(request.provider_tools)
        if server_tools:
            body["tools"] = [*body.get("tools", []), *server_tools]
        if "max_completion_tokens" in body:  # OpenRouter's name for the cap
            body["max_tokens"] = body.pop("max_completion_tokens")
        route = routing(self.included_providers)
        if route:
            body["provider"] = route
        reasoning = reasoning_body(request)
        if reasoning:
            body["reasoning"] = reasoning
        body["usage"] = {"include": True}  # adds usage.cost (the billed amount) to the response
        headers = self.base_headers()
        if streaming:
            headers["accept"] = "text/event-stream"
        return PreparedRequest(
            "POST", f"{self.base_url}/chat/completions", headers, body, streaming
        )

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def stream_parser(self, request: ProviderRequest) -> StreamParser:
        return OpenRouterStreamParser(show_reasoning=not _excluded(request))

    def parse_body(self, payload: Any, request: ProviderRequest) -> list[StreamEvent]:
        events, message = parse_chat_completion(self.vendor, payload)
        if _excluded(request):
            events = [e for e in events if not isinstance(e, ReasoningDelta)]
        events[-1:-1] = GeneratedImages().feed(message.get("images"))
        annotations = Annotations()
        annotations.feed(message.get("annotations"))
        events[-1:-1] = annotations.events(payload.get("id"), payload.get("usage"))
        finish = events[-1]
        assert isinstance(finish, FinishDetails)
        details = message.get("reasoning_details")
        _with_extras(
            finish,
            payload.get("usage"),
            details if isinstance(details, list) else [],
            payload.get("provider"),
        )
        return events


def _excluded(request: ProviderRequest) -> bool:
    return bool(request.reasoning is not None and request.reasoning.exclude)
