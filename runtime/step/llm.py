"""One LLM request attempt: stream it, collect the reply, and describe it as a log row.

``run_attempt`` is the unit the retry/fallback ladder wraps (``runtime.step.attempts``):
it sends one request to one provider and either returns an ``LLMReply`` or
raises ``ProviderError``. The log helpers turn an attempt into its ``LogRecord``
(the exact vendor request, a response summary, tokens, cost, latency, time to
first token, the error).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from runtime.core.messages import ToolCall, make_tool_call
from runtime.core.provider_tools import CitationsFound, ProviderToolDone, WebSearchDone
from runtime.core.spec import ModelDefinition
from runtime.providers.adapter import FinishDetails, strip_inline_data, wire_request
from runtime.providers.base import (
    NETWORK,
    UNKNOWN,
    Finish,
    ImageDelta,
    Provider,
    ProviderError,
    ProviderRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    Usage,
)
from runtime.providers.pricing import cost_of
from runtime.store.error_origin import provider_origin
from runtime.store.protocol import LogRecord
from runtime.store.storable import SeenPrefix

MAX_ERROR_LINES = 100
OnDelta = Callable[[str], None]
OnImage = Callable[[ImageDelta], Awaitable[dict[str, Any] | None]]
ProviderToolEvent = ProviderToolDone | WebSearchDone | CitationsFound
OnProviderTool = Callable[[ProviderToolEvent], None]
OnToolStream = Callable[[object], Awaitable[None]]
TOOL_STREAM = (ToolCallStart, ToolCallDelta, ToolCallDone)


@dataclass(slots=True)
class LLMReply:
    """A complete model response."""

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    latency_ms: int = 0
    ttft_ms: int | None = None
    # From the adapter's ``FinishDetails`` (empty for the ``test`` provider).
    provider_data: dict[str, Any] = field(default_factory=dict)
    response_model: str | None = None
    response_id: str | None = None
    served_by: str | None = None
    vendor_finish_reason: str | None = None
    reported_cost: float | None = None
    # Generated images, as the ``AttachmentRef``s they were stored under (``on_image``).
    images: list[dict[str, Any]] = field(default_factory=list)
    # What the vendor ran itself (``ProviderExecutedToolResult.dump()``s), the searches
    # among them (``WebSearchDone`` results) and the answer's sources (``Citation.dump()``s,
    # character offsets into ``content``); never executed here.
    provider_tools: list[dict[str, Any]] = field(default_factory=list)
    web_searches: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reasoning_details(self) -> list[Any] | None:
        """OpenRouter's ``reasoning_details`` (the spec's message field), when it sent any."""
        details = self.provider_data.get("openrouter", {}).get("reasoning_details")
        return list(details) if details else None


class _Collector:
    """Accumulates stream events into an ``LLMReply``."""

    def __init__(self, on_text: OnDelta, on_reasoning: OnDelta) -> None:
        self.reply = LLMReply()
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[str, dict[str, Any]] = {}
        self.finished = False
        self._on_text, self._on_reasoning = on_text, on_reasoning

    def feed(self, item: object) -> None:
        if isinstance(item, TextDelta):
            self.text.append(item.text)
            self._on_text(item.text)
        elif isinstance(item, ReasoningDelta):
            self.reasoning.append(item.text)
            self._on_reasoning(item.text)
        elif isinstance(item, ToolCallStart):
            self.calls.setdefault(item.id, {"name": item.name, "args": []})
        elif isinstance(item, ToolCallDelta):
            self.calls.setdefault(item.id, {"name": "", "args": []})["args"].append(item.delta)
        elif isinstance(item, ToolCallDone):
            self.calls[item.id] = {"name": item.name, "args": [item.arguments], "done": True}
        elif isinstance(item, ProviderToolDone):
            self.reply.provider_tools.append(item.tool.dump())
        elif isinstance(item, WebSearchDone):
            self.reply.web_searches.append({"id": item.id, **item.result})
        elif isinstance(item, CitationsFound):
            self.reply.citations.extend(c.dump() for c in item.citations)
        elif isinstance(item, Finish):
            self.reply.finish_reason, self.reply.usage, self.finished = (
                item.reason,
                item.usage,
                True,
            )
            if isinstance(item, FinishDetails):
                self._details(item)

    def _details(self, item: FinishDetails) -> None:
        reply = self.reply
        reply.provider_data = dict(item.provider_data)
        reply.response_model, reply.response_id = item.response_model, item.response_id
        reply.served_by, reply.vendor_finish_reason = item.served_by, item.vendor_finish_reason
        reply.reported_cost = item.reported_cost

    def result(self) -> LLMReply:
        self.reply.content = "".join(self.text)
        self.reply.reasoning = "".join(self.reasoning) or None
        self.reply.tool_calls = [
            make_tool_call(call_id, c["name"], "".join(c["args"]) or "{}")
            for call_id, c in self.calls.items()
        ]
        return self.reply


async def run_attempt(
    provider: Provider,
    request: ProviderRequest,
    on_text: OnDelta = lambda _: None,
    on_reasoning: OnDelta = lambda _: None,
    on_image: OnImage | None = None,
    on_provider_tool: OnProviderTool | None = None,
    on_tool_stream: OnToolStream | None = None,
) -> LLMReply:
    """Send one request and collect the streamed reply; raises ``ProviderError``.

    ``on_image`` stores each generated image as it arrives and returns its
    ``AttachmentRef`` (``None``: not stored); the refs end up in ``reply.images``.
    ``on_provider_tool`` hears each provider-run tool, search and citation as it arrives;
    ``on_tool_stream`` each tool-call event (start, argument delta, done) as it arrives.
    """
    started = time.perf_counter()
    collector = _Collector(on_text, on_reasoning)
    try:
        async for item in provider.stream(request):
            if collector.reply.ttft_ms is None:
                collector.reply.ttft_ms = _ms_since(started)
            if isinstance(item, ImageDelta):
                ref = await on_image(item) if on_image is not None else None
                if ref is not None:
                    collector.reply.images.append(ref)
                continue
            if on_provider_tool is not None and isinstance(
                item, ProviderToolDone | WebSearchDone | CitationsFound
            ):
                on_provider_tool(item)
            collector.feed(item)
            if on_tool_stream is not None and isinstance(item, TOOL_STREAM):
                await on_tool_stream(item)
    except ProviderError:
        raise
    except Exception as exc:  # an adapter bug must not look like a crash of the engine
        raise ProviderError(f"Provider failure ({type(exc).__name__}: {exc})", UNKNOWN) from exc
    if not collector.finished:
        raise ProviderError(
            "The response stream ended without a finish event", NETWORK, retryable=True
        )
    reply = collector.result()
    reply.latency_ms = _ms_since(started)
    return reply


def _ms_since(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


# --- logs ----------------------------------------------------------------------------------


def opened_log(
    *,
    log_id: str,
    thread_id: str,
    model: ModelDefinition,
    request: ProviderRequest,
    root_message_id: str | None,
    parent_log_id: str | None,
    created_at: int,
    attempt: int = 1,
    retry_of_id: str | None = None,
    provider: object = None,
) -> LogRecord:
    """The log row written (incomplete) when the request is sent."""
    return LogRecord(
        id=log_id,
        thread_id=thread_id,
        kind="llm",
        message_id=root_message_id,
        parent_id=parent_log_id,
        retry_of_id=retry_of_id,
        provider=model.provider,
        model=model.name,
        model_id=model.model,
        prompt_name=str(request.metadata.get("prompt_name", "")),
        attempt=attempt,
        request_body=request_body(provider, request),
        system_prompt=request.system,
        created_at=created_at,
    )


def request_body(provider: object, request: ProviderRequest) -> dict[str, Any]:
    """What the log keeps of a request.

    For an HTTP adapter, the exact vendor request (method, URL, headers without
    credentials, body with inline base64 data stripped) plus a short ``summary``;
    for a provider without a wire format (``test``), the neutral request itself.
    """
    wire = wire_request(provider, request) if provider is not None else None
    if wire is None:
        return _summary(request)
    wire["summary"] = {
        "model": request.model,
        "messages": len(request.messages),
        "tools": [t.name for t in request.tools],
        "tool_choice": request.tool_choice,
        "reasoning": request.reasoning.dump() if request.reasoning else None,
    }
    return wire


# The messages of the last summary found free of inline data (one slot for the process:
# a session's next request repeats them; a miss only costs a whole check).
_without_inline = SeenPrefix()


def _summary(request: ProviderRequest) -> dict[str, Any]:
    """The neutral request, inline data stripped; only messages the last summary did not
    hold are searched for it (the history is not searched again at every step)."""
    summary = request.summary()
    messages = summary["messages"]
    head = {**summary, "messages": _without_inline.new_items(messages)}
    if strip_inline_data(head) is head:
        _without_inline.passed(messages)
        return summary
    _without_inline.passed([])
    stripped: dict[str, Any] = strip_inline_data(summary)
    return stripped


def completed_log(log: LogRecord, model: ModelDefinition, reply: LLMReply) -> LogRecord:
    """The log row once the response arrived: usage, cost, timing, what served it."""
    usage, cost = reply.usage, cost_of(model, reply.usage, reply.reported_cost)
    return replace(
        log,
        response_body=response_body(reply),
        status_code=200,
        finish_reason=reply.finish_reason,
        input_tokens=usage.input_tokens,
        cached_tokens=usage.cached_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        total_tokens=usage.total_tokens,
        cost_input=cost.input,
        cost_cached=cost.cached,
        cost_output=cost.output,
        cost_total=cost.total,
        cost_known=cost.known,
        latency_ms=reply.latency_ms,
        time_to_first_token_ms=reply.ttft_ms,
        is_complete=True,
    )


def response_body(reply: LLMReply) -> dict[str, Any]:
    """A summary of the response for the log (the vendor's own fields when it sent them)."""
    body: dict[str, Any] = {
        "content": reply.content,
        "tool_calls": reply.tool_calls,
        "reasoning": reply.reasoning,
        "finish_reason": reply.finish_reason,
    }
    extras = {
        "vendor_finish_reason": reply.vendor_finish_reason,
        "response_model": reply.response_model,
        "response_id": reply.response_id,
        "served_by": reply.served_by,
        "reported_cost": reply.reported_cost,
        "provider_data": reply.provider_data or None,
        "images": list(reply.images) or None,  # refs to the stored files, never the pixels
        "provider_tools": list(reply.provider_tools) or None,
        "web_searches": list(reply.web_searches) or None,
        "citations": list(reply.citations) or None,
    }
    body.update({k: v for k, v in extras.items() if v is not None})
    return body


def failed_log(
    log: LogRecord,
    error: ProviderError,
    latency_ms: int,
    partial_text: str = "",
) -> LogRecord:
    """The log row of a failed attempt (``partial_text``: what was streamed before it failed)."""
    body = error.describe()
    if partial_text:
        body["partial_text"] = partial_text
    return replace(
        log,
        error=truncate_error(error.message),
        error_type=error.code,
        error_origin=provider_origin(log.provider),
        status_code=error.status,
        latency_ms=latency_ms,
        is_complete=True,
        response_body=body,
    )


def interrupted_log(log: LogRecord) -> LogRecord:
    """A log whose request never completed (the session died): it consumed no response."""
    return replace(
        log,
        error="Request did not complete (the session was interrupted)",
        error_type="interrupted",
        error_origin="runtime",
        is_complete=True,
    )


def truncate_error(text: str) -> str:
    """At most ``MAX_ERROR_LINES`` lines of error text."""
    lines = text.splitlines()
    if len(lines) <= MAX_ERROR_LINES:
        return text
    extra = len(lines) - MAX_ERROR_LINES
    return "\n".join(lines[:MAX_ERROR_LINES] + [f"[Truncated: {extra} additional lines]"])
