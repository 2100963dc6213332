"""The attempt ladder: retries with backoff on one model, then each fallback model in order.

Reference §4.8: two attempts per model; between attempts of the same model wait
``base × 2^(n−1)`` (plus a little jitter) or the vendor's Retry-After when that
is larger; then the next model of ``fallbacks``. Our decisions on top:

- an error that is not ``retryable`` (bad request, bad key, context too long)
  skips the second attempt on that model but still moves to the fallbacks: a
  different model or vendor may accept what this one refused;
- a ``timeout`` (first chunk or stall) also skips the in-place retry, as in the
  reference;
- a Retry-After longer than ``max_delay`` is not waited for: we move on;
- once any output reached the caller, a failure is raised as
  ``PartialResponseError`` with the partial text: the ladder never retries or
  switches models silently under a half-streamed reply.

Each attempt is reported through ``on_event`` (started / failed / succeeded,
plus ``FallbackTriggered`` when moving to the next model) so the engine writes
one log row per attempt and emits its ``fallback_triggered`` frame.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from runtime.core.spec import ModelDefinition
from runtime.providers import errors
from runtime.providers.base import (
    Finish,
    Provider,
    ProviderError,
    ProviderRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try. Timeouts are in seconds (``None``: no guard)."""

    attempts_per_model: int = 2
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: float = 0.1  # up to +10 % on the computed backoff, so retries do not align
    first_chunk_timeout: float | None = 120.0
    stall_timeout: float | None = 45.0


@dataclass(slots=True)
class AttemptContext:
    """One attempt: which model, which try, and what output already reached the caller."""

    model: ModelDefinition
    number: int  # 1-based across the whole ladder (attempts made, skipped ones not counted)
    model_attempt: int  # 1-based within this model
    fallback_index: int  # 0 for the primary model
    previous_error: ProviderError | None = None
    delivered: bool = False
    _text: list[str] = field(default_factory=list)
    _reasoning: list[str] = field(default_factory=list)

    @property
    def is_fallback(self) -> bool:
        return self.fallback_index > 0

    def deliver_text(self, text: str) -> None:
        """Call when a text delta reaches the caller (the point of no silent retry)."""
        self.delivered = True
        self._text.append(text)

    def deliver_reasoning(self, text: str) -> None:
        """Call when a reasoning delta reaches the caller."""
        self.delivered = True
        self._reasoning.append(text)

    def mark_delivered(self) -> None:
        """Call when any other output (a tool-call event) reaches the caller."""
        self.delivered = True

    @property
    def partial_text(self) -> str:
        return "".join(self._text)

    @property
    def partial_reasoning(self) -> str:
        return "".join(self._reasoning)


@dataclass(frozen=True, slots=True)
class AttemptStarted:
    attempt: AttemptContext


@dataclass(frozen=True, slots=True)
class AttemptFailed:
    """``retry_in`` is the delay before the same model is tried again, ``None`` when it is not."""

    attempt: AttemptContext
    error: ProviderError
    retry_in: float | None


@dataclass(frozen=True, slots=True)
class AttemptSucceeded:
    attempt: AttemptContext
    finish: Finish | None = None


@dataclass(frozen=True, slots=True)
class FallbackTriggered:
    from_model: ModelDefinition
    to_model: ModelDefinition
    error: ProviderError | None


LadderEvent = AttemptStarted | AttemptFailed | AttemptSucceeded | FallbackTriggered
OnEvent = Callable[[LadderEvent], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class LadderStart:
    """Where a ladder starts: a fresh one at the first model's first attempt, a resumed
    one at the rung after the attempts already made (``previous``: the last one's error)."""

    index: int = 0
    model_attempt: int = 1
    number: int = 1
    previous: ProviderError | None = None


def next_rung(
    models: Sequence[ModelDefinition],
    index: int,
    model_attempt: int,
    number: int,
    error: ProviderError,
    policy: RetryPolicy | None = None,
) -> LadderStart | None:
    """Where the ladder goes after attempt ``number`` (``model_attempt`` of ``models[index]``)
    failed with ``error``; ``None`` when it is exhausted."""
    policy = policy or RetryPolicy()
    if retry_delay(error, model_attempt, policy, rand=lambda: 0.0) is not None:
        return LadderStart(index, model_attempt + 1, number + 1, error)
    if index + 1 < len(models):
        return LadderStart(index + 1, 1, number + 1, error)
    return None


def retry_delay(
    error: ProviderError,
    model_attempt: int,
    policy: RetryPolicy,
    rand: Callable[[], float] = random.random,
) -> float | None:
    """Seconds to wait before retrying the same model, or ``None`` to move on."""
    if model_attempt >= policy.attempts_per_model:
        return None
    if not error.retryable or error.code == errors.TIMEOUT:
        return None
    backoff = policy.base_delay * 2 ** (model_attempt - 1)
    backoff = min(backoff * (1 + policy.jitter * rand()), policy.max_delay)
    asked = error.retry_after
    if asked is not None and asked > policy.max_delay:
        return None  # the vendor wants a long pause: a fallback model is the better bet
    return max(backoff, asked or 0.0)


def exhausted(models: Sequence[ModelDefinition], last: ProviderError | None) -> errors.AdapterError:
    """The ladder's final error (reference wording, then the last error's text)."""
    text = (
        f"All retry attempts exhausted for model {models[0].name} and {len(models) - 1} fallbacks"
    )
    if last is not None:
        text += f": {last.message}"
    return errors.AdapterError(
        text,
        last.code if last else errors.UNKNOWN,
        last.status if last else None,
        retryable=False,
        vendor_code=last.vendor_code if last else None,
        request_id=last.request_id if last else None,
    )


async def _emit(on_event: OnEvent | None, event: LadderEvent) -> None:
    if on_event is None:
        return
    result = on_event(event)
    if inspect.isawaitable(result):
        await result


def _attempts(
    models: Sequence[ModelDefinition], policy: RetryPolicy, start: LadderStart = LadderStart()
) -> list[tuple[int, int]]:
    return [
        (index, n)
        for index in range(len(models))
        for n in range(1, policy.attempts_per_model + 1)
        if (index, n) >= (start.index, start.model_attempt)
    ]


async def _after_failure(
    ctx: AttemptContext,
    error: ProviderError,
    policy: RetryPolicy,
    on_event: OnEvent | None,
    sleep: Sleep,
    rand: Callable[[], float],
) -> bool:
    """Report a failed attempt and wait before the next one; True means skip to the next model.

    Once output reached the caller the failure is final: it is raised with the partial text.
    """
    if ctx.delivered:
        raise errors.PartialResponseError(error, ctx.partial_text, ctx.partial_reasoning) from error
    delay = retry_delay(error, ctx.model_attempt, policy, rand)
    await _emit(on_event, AttemptFailed(ctx, error, delay))
    if delay is None:
        return True
    await sleep(delay)
    return False


async def run_with_fallbacks(
    models: Sequence[ModelDefinition],
    attempt: Callable[[AttemptContext], Awaitable[T]],
    *,
    policy: RetryPolicy | None = None,
    on_event: OnEvent | None = None,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
    start: LadderStart | None = None,
) -> T:
    """Run ``attempt`` along the ladder until one returns; raise the final error otherwise.

    ``attempt`` raises ``ProviderError`` on failure and must call
    ``ctx.deliver_text`` / ``deliver_reasoning`` / ``mark_delivered`` as output
    reaches its caller. Any other exception (a bug, a cancellation) stops the ladder.
    ``start`` resumes a ladder whose first attempts were made earlier (``next_rung``).
    """
    policy, start = policy or RetryPolicy(), start or LadderStart()
    last: ProviderError | None = start.previous
    skip_model, number = -1, start.number - 1
    for index, model_attempt in _attempts(models, policy, start):
        if index == skip_model:
            continue
        number += 1  # attempts actually made, so log rows number 1, 2, 3 …
        if model_attempt == 1 and index > 0:
            await _emit(on_event, FallbackTriggered(models[index - 1], models[index], last))
        ctx = AttemptContext(models[index], number, model_attempt, index, last)
        await _emit(on_event, AttemptStarted(ctx))
        try:
            result = await attempt(ctx)
        except ProviderError as error:
            last = error
            if await _after_failure(ctx, error, policy, on_event, sleep, rand):
                skip_model = index
            continue
        await _emit(on_event, AttemptSucceeded(ctx))
        return result
    raise exhausted(models, last)


async def stream_with_fallbacks(
    models: Sequence[ModelDefinition],
    provider_for: Callable[[ModelDefinition], Provider],
    request_for: Callable[[ModelDefinition], ProviderRequest],
    *,
    policy: RetryPolicy | None = None,
    on_event: OnEvent | None = None,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> AsyncIterator[StreamEvent]:
    """The ladder as one event stream: events of the attempt that succeeds reach the
    caller as they arrive; ``on_event`` says which attempt they belong to."""
    policy = policy or RetryPolicy()
    last: ProviderError | None = None
    skip_model, number = -1, 0
    for index, model_attempt in _attempts(models, policy):
        if index == skip_model:
            continue
        number += 1
        model = models[index]
        if model_attempt == 1 and index > 0:
            await _emit(on_event, FallbackTriggered(models[index - 1], model, last))
        ctx = AttemptContext(model, number, model_attempt, index, last)
        await _emit(on_event, AttemptStarted(ctx))
        finish: Finish | None = None
        try:
            provider = provider_for(model)
            events = watch_stream(provider.stream(request_for(model)), policy)
            async for event in events:
                _record(ctx, event)
                if isinstance(event, Finish):
                    finish = event
                yield event
        except ProviderError as error:
            last = error
            if await _after_failure(ctx, error, policy, on_event, sleep, rand):
                skip_model = index
            continue
        await _emit(on_event, AttemptSucceeded(ctx, finish))
        return
    raise exhausted(models, last)


def _record(ctx: AttemptContext, event: StreamEvent) -> None:
    if isinstance(event, TextDelta):
        ctx.deliver_text(event.text)
    elif isinstance(event, ReasoningDelta):
        ctx.deliver_reasoning(event.text)
    elif not isinstance(event, Finish):
        ctx.mark_delivered()


# --- stream guards ---------------------------------------------------------------------------


async def watch_stream(
    stream: AsyncIterator[T], policy: RetryPolicy | None = None
) -> AsyncIterator[T]:
    """``stream`` with the first-chunk and stall timeouts applied (``timeout`` errors).

    The first event must come within ``first_chunk_timeout`` (this covers
    connecting and the vendor's time to first token), each next one within
    ``stall_timeout`` of the previous.
    """
    policy = policy or RetryPolicy()
    limit, what = policy.first_chunk_timeout, "first chunk"
    guard = _StallGuard()
    try:
        while True:
            guard.arm(limit)
            try:
                item = await anext(stream)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if not guard.fired():
                    raise
                raise errors.AdapterError(
                    f"No {what} from the provider within {limit:g} s",
                    errors.TIMEOUT,
                    retryable=True,
                ) from None
            finally:
                guard.disarm()
            yield item
            limit, what = policy.stall_timeout, "data"
    finally:
        guard.close()
        closer: Any = getattr(stream, "aclose", None)
        if closer is not None:
            await closer()


def current_task_of(loop: asyncio.AbstractEventLoop) -> Callable[[], asyncio.Task[Any] | None]:
    """A function that answers ``asyncio.current_task(loop)``, as cheaply as this Python can.

    The stall guard asks once per streamed token. Before Python 3.12 ``current_task`` is
    Python code around the C-kept ``_current_tasks`` dict (~3% of a worker streaming
    tens of thousands of tokens a second, issue #21); its ``get`` bound to the loop asks the
    same dict in C. Where that dict is not there (3.12+ has a C ``current_task``), the
    public function is used.
    """
    tasks = getattr(asyncio.tasks, "_current_tasks", None)
    if asyncio.current_task.__module__ == "asyncio.tasks" and isinstance(tasks, dict):
        return functools.partial(tasks.get, loop)
    return functools.partial(asyncio.current_task, loop)


class _StallGuard:
    """The timeout of ``watch_stream`` with one timer per stall period, not one per event.

    ``asyncio.timeout`` around every read built a ``Timeout``, a timer and its
    cancellation for each token: a few percent of a worker streaming 10,000 tokens a
    second (issue #21). Here each read only notes when it began; one pending timer checks,
    when it comes due, whether the read in progress has waited ``limit`` (then it cancels
    the reading task, as ``asyncio.timeout`` does) or re-arms itself for the current read.
    The time the consumer spends between reads never counts, as before.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._current_task = current_task_of(self._loop)
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._started = 0.0
        self._limit: float | None = None
        self._reading = False
        self._fired = False

    def arm(self, limit: float | None) -> None:
        # The task of this read: a stream may be read from another task than the one
        # that began it, and the timer must cancel the one that waits now.
        self._task = self._current_task()
        self._started, self._limit, self._reading = self._loop.time(), limit, True
        if limit is None:
            return  # no limit for this read
        due = self._started + limit
        if self._handle is None or self._handle.when() > due:
            if self._handle is not None:
                self._handle.cancel()
            self._handle = self._loop.call_at(due, self._check)

    def disarm(self) -> None:
        self._reading = False

    def fired(self) -> bool:
        """Whether this guard cancelled the read (and takes that cancellation back)."""
        if not self._fired:
            return False
        self._fired = False
        if self._task is not None:
            self._task.uncancel()
        return True

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        if not self._reading or self._limit is None:
            return  # the next ``arm`` sets a timer again
        due = self._started + self._limit
        if self._loop.time() < due:
            self._handle = self._loop.call_at(due, self._check)
        elif self._task is not None:
            self._fired = True
            self._task.cancel()


class GuardedProvider:
    """A provider whose stream has the first-chunk and stall timeouts applied."""

    def __init__(self, provider: Provider, policy: RetryPolicy | None = None) -> None:
        self.provider = provider
        self.policy = policy or RetryPolicy()
        self.name = provider.name

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        return watch_stream(self.provider.stream(request), self.policy)
