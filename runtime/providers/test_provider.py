"""The ``test`` provider: scripted responses, no network, no API key.

A model definition with ``provider: 'test'`` and a ``script`` is replayed per
thread: the engine passes ``request.sequence`` (how many responses the thread
already got from this model, counted from stored logs), so the n-th request of
a thread gets the n-th response and a resumed session never consumes a
response twice. Without a script every request answers "Test response
received." Tests can also build a script in code with ``TestScript``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import operator
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any

from runtime.core.spec import (
    InputExpectation,
    ModelDefinition,
    ScriptedError,
    ScriptedResponse,
    ScriptedToolCall,
    ScriptedUsage,
    StreamingSimulation,
)
from runtime.providers.adapter import is_media_part, joined_text, media_name
from runtime.providers.base import (
    ERROR_CODES,
    INVALID_REQUEST,
    UNKNOWN,
    Finish,
    FinishReason,
    ImageDelta,
    ProviderError,
    ProviderRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    Usage,
    status_kind,
)

DEFAULT_TEXT = "Test response received."


def estimate_tokens(text: str | None) -> int:
    """About four characters per token (the reference's estimate)."""
    return math.ceil(len(text) / 4) if text else 0


class TestScript:
    """A fluent builder for scripts (the reference's ``TestScript``)."""

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        self.responses: list[ScriptedResponse] = []
        self.streaming: StreamingSimulation | None = None

    def add_response(self, response: ScriptedResponse | dict[str, Any]) -> TestScript:
        """Append any scripted response (a ``ScriptedResponse`` or its camelCase dict)."""
        if isinstance(response, dict):
            response = ScriptedResponse.model_validate(response)
        self.responses.append(response)
        return self

    def add_text(self, text: str, **options: Any) -> TestScript:
        """Append a text reply (finish reason ``stop``)."""
        return self.add_response(ScriptedResponse(content=text, finish_reason="stop", **options))

    def add_tool_calls(
        self, calls: Iterable[dict[str, Any]], content: str | None = None, **options: Any
    ) -> TestScript:
        """Append a reply calling tools: ``[{name, arguments, id?}]`` (finish ``tool_calls``)."""
        scripted = [ScriptedToolCall.model_validate(c) for c in calls]
        response = ScriptedResponse(
            content=content, tool_calls=scripted, finish_reason="tool_calls", **options
        )
        return self.add_response(response)

    def add_tool_call(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> TestScript:
        """Append a reply with a single tool call."""
        call: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if "id" in kw:
            call["id"] = kw.pop("id")
        return self.add_tool_calls([call], **kw)

    def add_error(
        self, message: str, code: str | None = None, status: int | None = None
    ) -> TestScript:
        """Append a reply that fails with a provider error."""
        error = ScriptedError(message=message, code=code, status=status)
        return self.add_response(ScriptedResponse(error=error))

    def add_reasoning(self, content: str, reasoning: str) -> TestScript:
        """Append a text reply with reasoning."""
        return self.add_response(ScriptedResponse(content=content, reasoning_content=reasoning))

    def with_streaming(self, chunk_size: int = 8, chunk_delay_ms: int = 0) -> TestScript:
        """Stream text in ``chunk_size`` slices with a pause between them."""
        self.streaming = StreamingSimulation(chunk_size=chunk_size, chunk_delay_ms=chunk_delay_ms)
        return self

    def model(self, name: str, **fields: Any) -> ModelDefinition:
        """A ``test`` model definition carrying this script."""
        return ModelDefinition(
            name=name,
            provider="test",
            model=fields.pop("model", "scripted"),
            script=list(self.responses),
            streaming=self.streaming,
            **fields,
        )


class TestProvider:
    """Replays a script; records every request it was sent (``requests``)."""

    __test__ = False
    name = "test"

    def __init__(
        self,
        script: TestScript | Iterable[ScriptedResponse | dict[str, Any]] | None = None,
        *,
        streaming: StreamingSimulation | None = None,
    ) -> None:
        if isinstance(script, TestScript):
            streaming = streaming or script.streaming
            script = script.responses
        self.script: list[ScriptedResponse] | None = (
            None if script is None else [_as_response(r) for r in script]
        )
        self.streaming = streaming
        self.requests: list[ProviderRequest] = []
        self._cursor = 0

    @classmethod
    def from_model(cls, model: ModelDefinition) -> TestProvider:
        """The provider for a ``test`` model definition (its script and streaming settings).

        Built for every request: the definition's validated script is used as it is (the
        provider never changes it), not converted again at every step."""
        provider = cls(streaming=model.streaming)
        provider.script = model.script
        return provider

    def remaining(self, consumed: int) -> int:
        """How many scripted responses are left after ``consumed`` were used."""
        return max(0, len(self.script or []) - consumed)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Yield the next scripted response as stream events (or raise its error)."""
        if request.provider_tools:
            # Saving refuses these (it offers none); never answer as if the tool had run.
            names = ", ".join(f"provider:{t.name}" for t in request.provider_tools)
            raise ProviderError(
                f"The test provider runs no provider tools (asked for: {names}).",
                INVALID_REQUEST,
            )
        self.requests.append(request)
        index = self._next_index(request)
        response = self._pick(index, request)
        if response.delay_ms:
            await asyncio.sleep(response.delay_ms / 1000)
        if response.expect_input is not None:
            _check_expectation(response, request)
        if response.error is not None:
            raise _scripted_error(response.error)
        async for item in self._events(response, request, index):
            yield item

    def _next_index(self, request: ProviderRequest) -> int:
        index = request.sequence if request.sequence is not None else self._cursor
        self._cursor = index + 1
        return index

    def _pick(self, index: int, request: ProviderRequest) -> ScriptedResponse:
        if self.script is None:
            return ScriptedResponse(content=DEFAULT_TEXT, finish_reason="stop")
        if index < len(self.script):
            return self.script[index]
        raise ProviderError(_exhausted_message(len(self.script), request), INVALID_REQUEST)

    async def _events(
        self, response: ScriptedResponse, request: ProviderRequest, index: int
    ) -> AsyncIterator[StreamEvent]:
        for position, image in enumerate(response.images or []):
            yield ImageDelta(position, image.mime_type, image.data)
        async for delta in self._text_chunks(response.content or ""):
            yield TextDelta(delta)
        if response.reasoning_content:
            yield ReasoningDelta(response.reasoning_content)
        for position, call in enumerate(response.tool_calls or []):
            call_id = call.id or _call_id(request, index, position)
            arguments = (
                call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            )
            yield ToolCallStart(call_id, call.name)
            yield ToolCallDelta(call_id, arguments)
            yield ToolCallDone(call_id, call.name, arguments)
        yield Finish(_finish_reason(response), self._usage(response, request))

    async def _text_chunks(self, text: str) -> AsyncIterator[str]:
        if not text:
            return
        if self.streaming is None:
            yield text
            return
        size, delay = self.streaming.chunk_size, self.streaming.chunk_delay_ms / 1000
        for start in range(0, len(text), size):
            if start and delay:
                await asyncio.sleep(delay)
            yield text[start : start + size]

    def _usage(self, response: ScriptedResponse, request: ProviderRequest) -> Usage:
        scripted = response.usage or ScriptedUsage()
        prompt = _history_tokens(request.messages) + estimate_tokens(request.system)
        completion = estimate_tokens(response.content)
        return Usage(
            input_tokens=scripted.prompt_tokens if scripted.prompt_tokens is not None else prompt,
            output_tokens=(
                scripted.completion_tokens if scripted.completion_tokens is not None else completion
            ),
            cached_tokens=scripted.cached_tokens or 0,
            reasoning_tokens=scripted.reasoning_tokens or 0,
        )


def _as_response(item: ScriptedResponse | dict[str, Any]) -> ScriptedResponse:
    return item if isinstance(item, ScriptedResponse) else ScriptedResponse.model_validate(item)


def _call_id(request: ProviderRequest, index: int, position: int) -> str:
    # Deterministic per (thread, model, response, position): a resumed session replays the
    # same ids, and ids never collide within a thread.
    thread_id = request.metadata.get("thread_id")
    if not thread_id:
        return f"call_{uuid.uuid4().hex[:8]}"
    seed = f"{thread_id}:{request.model_name}:{index}:{position}"
    return "call_" + hashlib.sha1(seed.encode()).hexdigest()[:12]


def _finish_reason(response: ScriptedResponse) -> FinishReason:
    if response.finish_reason:
        return response.finish_reason
    return "tool_calls" if response.tool_calls else "stop"


# The last request's messages and their estimated tokens. The next request of a session
# repeats them (the same objects: ``history.Converted``) before its new ones, so only those
# are estimated (issue #39: the estimate walked the whole history at every step). One slot
# for the process: providers are built per request, and a miss only costs a full estimate.
_estimated: tuple[list[dict[str, Any]], int] = ([], 0)


def _history_tokens(messages: list[dict[str, Any]]) -> int:
    global _estimated
    before, tokens = _estimated
    done = len(before)
    if len(messages) < done or not all(map(operator.is_, messages[:done], before)):
        done, tokens = 0, 0
    tokens += sum(estimate_tokens(_text_of(m)) for m in messages[done:])
    _estimated = (list(messages), tokens)
    return tokens


def _text_of(message: dict[str, Any]) -> str:
    return joined_text(message.get("content"))


def _scripted_error(error: ScriptedError) -> ProviderError:
    """The scripted failure as an adapter would raise it: the status decides retryability;
    a scripted code outside the eight is kept as the vendor's code."""
    code, retryable = status_kind(error.status) if error.status else (UNKNOWN, False)
    vendor_code = None
    if error.code in ERROR_CODES:
        code = error.code
    elif error.code:
        vendor_code = error.code
    return ProviderError(error.message, code, error.status, retryable, vendor_code=vendor_code)


def _exhausted_message(count: int, request: ProviderRequest) -> str:
    last = request.messages[-1] if request.messages else {}
    content = _text_of(last)[:100]
    return (
        f"TestProvider: Script exhausted after {count} responses. "
        f"Expected {count} total requests. Received request with {len(request.messages)} "
        f'messages. Last message role: "{last.get("role", "")}", content: "{content}..."'
    )


def _check_expectation(response: ScriptedResponse, request: ProviderRequest) -> None:
    expect = response.expect_input
    assert expect is not None
    problems: list[str] = []
    if expect.message_count is not None and len(request.messages) != expect.message_count:
        problems.append(f"expected {expect.message_count} messages, got {len(request.messages)}")
    if expect.contains_message is not None and not _has_message(request, expect.contains_message):
        problems.append(f"no user/assistant message contains {expect.contains_message!r}")
    if (
        expect.system_prompt_contains is not None
        and expect.system_prompt_contains not in request.system
    ):
        problems.append(f"system prompt does not contain {expect.system_prompt_contains!r}")
    wanted = expect.contains_tool_result
    if wanted is not None and not _has_tool_result(
        request, wanted.tool_name, wanted.result_contains
    ):
        problems.append(
            f"no tool result of {wanted.tool_name!r} matching {wanted.result_contains!r}"
        )
    problems.extend(_media_problems(expect, request))
    if problems:
        raise ProviderError(
            "TestProvider: input expectation failed: " + "; ".join(problems), INVALID_REQUEST
        )


def _has_message(request: ProviderRequest, needle: str) -> bool:
    return any(
        m.get("role") in ("user", "assistant") and needle in _text_of(m) for m in request.messages
    )


def _has_tool_result(request: ProviderRequest, tool_name: str, contains: str | None) -> bool:
    for message in request.messages:
        if message.get("role") != "tool":
            continue
        if message.get("name") not in (None, tool_name):
            continue
        if contains is None or contains in _text_of(message):
            return True
    return False


def _media_problems(expect: InputExpectation, request: ProviderRequest) -> list[str]:
    """What differs between the images/documents sent and ``imageCount`` / ``documentCount``
    / ``attachmentNames`` / ``attachmentTypes``."""
    media = [
        p
        for m in request.messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if is_media_part(p)
    ]
    images = [p for p in media if p.get("type") == "image_url"]
    refs = [p.get("attachment") or {} for p in media]
    problems: list[str] = []
    if expect.image_count is not None and len(images) != expect.image_count:
        problems.append(f"expected {expect.image_count} images, got {len(images)}")
    documents = len(media) - len(images)
    if expect.document_count is not None and documents != expect.document_count:
        problems.append(f"expected {expect.document_count} documents, got {documents}")
    names = {media_name(p) for p in media}
    missing = [n for n in expect.attachment_names or [] if n not in names]
    if missing:
        problems.append(f"no image or document named {', '.join(missing)} (sent: {sorted(names)})")
    types = {str(r.get("mimeType") or "") for r in refs} | {_data_type(p) for p in media}
    absent = [t for t in expect.attachment_types or [] if t not in types]
    if absent:
        problems.append(f"no image or document of type {', '.join(absent)}")
    return problems


def _data_type(part: dict[str, Any]) -> str:
    spec = part.get("image_url") or part.get("file") or {}
    url = spec.get("url") or spec.get("file_data") if isinstance(spec, dict) else spec
    if isinstance(url, str) and url.startswith("data:"):
        return url[5:].split(";", 1)[0].split(",", 1)[0]
    return ""
