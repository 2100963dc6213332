"""The attempt ladder of one step: retries and fallbacks, one LLM log row per attempt.

``Stepper.respond`` hands the step's request to ``AttemptLadder.run``, which
walks ``runtime.providers.retry.run_with_fallbacks`` over the step's model and
then each model of its ``fallbacks`` (reference §4.8; the policy is
``Limits.retry``, the waits go through ``Deps.sleep``). Per attempt:

- attempt 1 uses the log row opened with the step; each later attempt opens
  its own row (``attempt`` = its number on the ladder, ``retry_of_id`` = the
  failed row before it, also across fallbacks; that model's provider, model id
  and exact request) in a commit before it is sent, and the progress's open
  step points at it;
- a failed attempt's row is committed as soon as it fails, so it is visible
  during the backoff (the last one goes out with the failed message instead);
  that commit also reads the thread's stop flag, and a user stop ends the
  ladder there, never walking on to the fallbacks;
- frames: ``llm_request {model, attempt}`` per attempt, ``fallback_triggered
  {from, to}`` when the ladder switches models, and the deltas as
  ``message_chunk`` / ``reasoning_chunk``. Once a delta went out, a failure is
  final (``PartialResponseError``): no silent retry under a half-shown reply;
- each attempt's request carries its own ``sequence`` (responses that model
  already gave this thread), so the ``test`` provider's scripted replay holds
  across retries and fallbacks, and a resumed session never re-requests a
  response whose log is stored.

A step redone after a crash continues its ladder (``resume_start``): the
attempts whose failure is stored count, the next one is the rung after the
last of them, and its row says ``retry_of_id`` = that failure. So a resumed
step meets the same scripted responses as an uninterrupted one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from runtime.core.messages import Message, new_id
from runtime.core.progress import SessionProgress
from runtime.core.spec import ModelDefinition
from runtime.deps import Deps
from runtime.providers.adapter import joined_text
from runtime.providers.base import (
    CONTEXT_TOO_LONG,
    ImageDelta,
    Provider,
    ProviderError,
    ProviderRequest,
)
from runtime.providers.errors import PartialResponseError
from runtime.providers.retry import (
    AttemptContext,
    AttemptFailed,
    AttemptStarted,
    FallbackTriggered,
    GuardedProvider,
    LadderEvent,
    LadderStart,
    RetryPolicy,
    next_rung,
    run_with_fallbacks,
)
from runtime.providers.test_provider import estimate_tokens
from runtime.step.llm import (
    LLMReply,
    OnImage,
    OnToolStream,
    ProviderToolEvent,
    failed_log,
    opened_log,
    run_attempt,
)
from runtime.step.tool_progress import GenerationMeter
from runtime.store.events import (
    event,
    message_chunk,
    message_image,
    provider_tool_frame,
    telemetry,
)
from runtime.store.protocol import LogQuery, LogRecord, Store
from runtime.store.recorder import Batch, Recorder

Prepare = Callable[[ModelDefinition], Awaitable[ProviderRequest]]
OpenStepProgress = Callable[[str, str], SessionProgress | None]
RECENT_LOGS = 200  # a step's attempts are among the thread's newest LLM rows


class LadderStopped(Exception):
    """The user pressed stop while the ladder was between attempts."""


@dataclass(slots=True)
class Attempt:
    """One rung of the ladder: its model, its request, its log row (as last built)."""

    model: ModelDefinition
    request: ProviderRequest
    log: LogRecord
    started: float
    stored: bool = True  # whether ``log`` as it is now has been committed

    def latency_ms(self) -> int:
        """Milliseconds since the attempt was sent."""
        return int((time.perf_counter() - self.started) * 1000)


@dataclass(slots=True)
class LadderOutcome:
    """How the ladder ended: a reply, or an error (``stopped``: the user's stop)."""

    attempt: Attempt
    reply: LLMReply | None = None
    error: ProviderError | None = None
    stopped: bool = False
    partial_text: str = ""
    partial_reasoning: str = ""

    def pending_logs(self) -> list[LogRecord]:
        """The last attempt's row when it still has to be committed (with the message)."""
        return [] if self.attempt.stored else [self.attempt.log]


def tools_allowed(model: ModelDefinition) -> bool:
    """Whether a model takes tools (its capabilities do not say ``supportsToolCalls: false``,
    0.1.0: ``functionCalling: false``)."""
    return model.capabilities is None or model.capabilities.tool_calls is not False


def over_context(model: ModelDefinition, request: ProviderRequest) -> ProviderError | None:
    """The error of a request larger than the model's ``maxContextTokens`` says it takes
    (spec 0.2.0), estimated at four characters a token before it is sent: not retried, so
    the next fallback, if any, answers instead."""
    limit = model.capabilities.max_context_tokens if model.capabilities else None
    if limit is None:
        return None
    texts = [request.system, *(joined_text(m.get("content")) for m in request.messages)]
    texts += [json.dumps(t.parameters) + t.name + t.description for t in request.tools]
    size = sum(estimate_tokens(text) for text in texts) + (request.max_output_tokens or 0)
    if size <= limit:
        return None
    return ProviderError(
        f"The request (about {size} tokens with the reply) is more than model "
        f"'{model.name}' takes (maxContextTokens {limit}); it was not sent.",
        CONTEXT_TOO_LONG,
    )


class AttemptLadder:
    """Runs one step's request along the ladder; see the module docstring.

    ``first`` is the opened attempt (its request and log row are stored);
    ``prepare`` builds the request of a later attempt for its model.
    """

    def __init__(
        self,
        deps: Deps,
        recorder: Recorder,
        *,
        message: Message,
        depth: int,
        chain: list[ModelDefinition],
        start: LadderStart,
        first: Attempt,
        prepare: Prepare,
        progress: OpenStepProgress,
        save_image: OnImage | None = None,
        on_tool_stream: OnToolStream | None = None,
    ) -> None:
        self.deps, self.recorder = deps, recorder
        self.message, self.depth, self.chain, self.start = message, depth, chain, start
        self.prepare, self.progress = prepare, progress
        self.save_image, self.on_tool_stream = save_image, on_tool_stream
        self.current = first

    async def run(self) -> LadderOutcome:
        """Walk the ladder until an attempt answers, the ladder is exhausted, or a stop."""
        try:
            reply = await run_with_fallbacks(
                self.chain,
                self._attempt,
                policy=self.deps.limits.retry,
                on_event=self._on_event,
                sleep=self.deps.sleep,
                start=self.start,
            )
        except LadderStopped:
            return LadderOutcome(self.current, stopped=True)
        except PartialResponseError as error:
            self._fail(error, error.partial_text)
            return LadderOutcome(
                self.current,
                error=error,
                partial_text=error.partial_text,
                partial_reasoning=error.partial_reasoning,
            )
        except ProviderError as error:
            return LadderOutcome(self.current, error=error)
        return LadderOutcome(self.current, reply=reply)

    async def _attempt(self, ctx: AttemptContext) -> LLMReply:
        provider = GuardedProvider(self.deps.providers.for_model(ctx.model), self.deps.limits.retry)

        redactor = await self.recorder.ready()
        # A secret may be split across deltas: each stream holds back a short tail.
        streams = {False: redactor.stream(), True: redactor.stream()}

        def send(text: str, reasoning: bool) -> None:
            shown = streams[reasoning].feed(text)
            if shown:
                self.recorder.emit(
                    message_chunk(self.message.id, self.depth, shown, reasoning=reasoning)
                )

        meter = GenerationMeter(
            lambda tokens: self.recorder.emit(event("generation", {"outputTokens": tokens}))
        )

        def on_text(text: str) -> None:
            ctx.deliver_text(text)
            meter.add(text)
            send(text, False)

        def on_reasoning(text: str) -> None:
            ctx.deliver_reasoning(text)
            send(text, True)

        async def on_image(image: ImageDelta) -> dict[str, Any] | None:
            ref = await self.save_image(image) if self.save_image is not None else None
            if ref is not None:  # shown while the response still streams
                self.recorder.emit(message_image(self.message.id, self.depth, image.index, ref))
            return ref

        def on_provider_tool(item: ProviderToolEvent) -> None:
            frame = provider_tool_frame(self.message.id, self.depth, item)
            if frame is not None:
                self.recorder.emit(frame)

        too_long = over_context(ctx.model, self.current.request)
        if too_long is not None:
            raise too_long
        try:
            return await run_attempt(
                provider,
                self.current.request,
                on_text,
                on_reasoning,
                on_image,
                on_provider_tool,
                meter.tool_stream(self.on_tool_stream),
            )
        finally:
            for reasoning, stream in streams.items():
                rest = stream.flush()
                if rest:
                    self.recorder.emit(
                        message_chunk(self.message.id, self.depth, rest, reasoning=reasoning)
                    )

    async def _on_event(self, event: LadderEvent) -> None:
        if isinstance(event, FallbackTriggered):
            self.recorder.emit(
                telemetry(
                    "fallback_triggered",
                    **{"from": event.from_model.name, "to": event.to_model.name},
                )
            )
        elif isinstance(event, AttemptStarted):
            if event.attempt.number > self.start.number:  # the first one was opened with the step
                await self._reopen(event.attempt)
            self.current.started = time.perf_counter()
            self.recorder.emit(
                telemetry(
                    "llm_request", model=event.attempt.model.name, attempt=event.attempt.number
                )
            )
        elif isinstance(event, AttemptFailed):
            self._fail(event.error)
            if event.retry_in is not None or event.attempt.fallback_index < len(self.chain) - 1:
                await self._store_failure()

    def _fail(self, error: ProviderError, partial_text: str = "") -> None:
        attempt = self.current
        attempt.log = failed_log(attempt.log, error, attempt.latency_ms(), partial_text)
        attempt.stored = False

    async def _store_failure(self) -> None:
        """Commit the failed row now (not with the message); a stop seen here ends the ladder."""
        result = await self.recorder.commit(Batch(logs=[self.current.log]))
        self.current.stored = True
        if result.stopped:
            raise LadderStopped

    async def _reopen(self, ctx: AttemptContext) -> None:
        """Open the row of a later attempt (committed before the request is sent)."""
        previous, model = self.current.log, ctx.model
        request = await self.prepare(model)
        log = opened_log(
            log_id=new_id(),
            thread_id=previous.thread_id,
            model=model,
            request=request,
            root_message_id=previous.message_id,
            parent_log_id=previous.parent_id,
            created_at=self.deps.clock.now(),
            attempt=ctx.number,
            retry_of_id=previous.id,
            provider=provider_or_none(self.deps, model),
        )
        self.current = Attempt(model, request, log, time.perf_counter())
        await self.recorder.commit(
            Batch(logs=[log], progress=self.progress(self.message.id, log.id))
        )


def provider_or_none(deps: Deps, model: ModelDefinition) -> Provider | None:
    """The provider of ``model`` for describing a request (``None`` when none is installed:
    the attempt itself then fails with that error and is logged)."""
    try:
        return deps.providers.for_model(model)
    except ProviderError:
        return None


async def resume_start(
    store: Store,
    thread_id: str,
    first_log_id: str | None,
    chain: list[ModelDefinition],
    policy: RetryPolicy,
) -> tuple[LadderStart, LogRecord | None]:
    """Where a redone step's ladder continues, and the stored failure it retries.

    The step's rows are linked by ``retry_of_id``; ``first_log_id`` is any of
    them (the pending message's). Only failures that were stored count: an
    attempt whose row was interrupted consumed no response and is made again.
    """
    if first_log_id is None:
        return LadderStart(), None
    logs = await store.list_logs(thread_id, LogQuery(limit=RECENT_LOGS, order="desc", kind="llm"))
    failed = [log for log in _linked(logs, first_log_id) if log.is_complete and log.error_type]
    failed = [log for log in failed if log.error_type != "interrupted"]
    names = [m.name for m in chain]
    if not failed or failed[-1].model not in names:
        return LadderStart(), None
    last = failed[-1]
    index = names.index(last.model)
    tail = 0
    for log in reversed(failed):
        if log.model != last.model:
            break
        tail += 1
    rung = next_rung(chain, index, tail, last.attempt, _stored_error(last), policy)
    return (rung, last) if rung is not None else (LadderStart(), None)


def _linked(logs: list[LogRecord], log_id: str) -> list[LogRecord]:
    """The rows of one step, oldest first: back along ``retry_of_id``, then forward."""
    by_id = {log.id: log for log in logs}
    children: dict[str, LogRecord] = {}
    for log in sorted(logs, key=lambda row: row.created_at):
        if log.retry_of_id:
            children[log.retry_of_id] = log  # the newest retry wins (a redo after a crash)
    steps: list[LogRecord] = []
    current = by_id.get(log_id)
    while current is not None and current not in steps:
        steps.insert(0, current)
        current = by_id.get(current.retry_of_id or "")
    current = children.get(log_id)
    while current is not None and current not in steps:
        steps.append(current)
        current = children.get(current.id)
    return steps


def _stored_error(log: LogRecord) -> ProviderError:
    """The error of a stored failed attempt, as far as the ladder needs it."""
    body = log.response_body or {}
    retry_after = body.get("retry_after")
    return ProviderError(
        log.error,
        log.error_type,
        log.status_code,
        bool(body.get("retryable", False)),
        retry_after=float(retry_after) if isinstance(retry_after, int | float) else None,
    )
