"""The attempt ladder over real adapters and the replay server."""

from __future__ import annotations

import pytest

from runtime.core.spec import ModelDefinition
from runtime.providers.base import ProviderError
from runtime.providers.errors import AdapterError, PartialResponseError
from runtime.providers.registry import adapter_factories
from runtime.providers.retry import (
    AttemptFailed,
    AttemptStarted,
    FallbackTriggered,
    GuardedProvider,
    RetryPolicy,
    retry_delay,
    run_with_fallbacks,
    stream_with_fallbacks,
)
from runtime.step.llm import run_attempt

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import request, user
from .replay import Reply

OPENAI_TEXT = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")[1]
ANTHROPIC_TEXT = recordings.cassette("anthropic/messages_stream_text.yaml")[0]
FAST = RetryPolicy(base_delay=0.001, max_delay=5.0, first_chunk_timeout=5, stall_timeout=5)


class Sleeps:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def models(replay, *specs: tuple[str, str]) -> list[ModelDefinition]:
    return [
        ModelDefinition(
            name=name, provider=provider, model=f"{name}-id", base_url=_base(replay, provider)
        )  # type: ignore[arg-type]
        for name, provider in specs
    ]


def _base(replay, provider: str) -> str:
    return (
        replay.url
        + {"openai": "/v1", "anthropic": "/v1", "google": "/v1beta", "openrouter": "/api/v1"}[
            provider
        ]
    )


def ladder_parts(client, environ=None):
    factories = adapter_factories(
        client, environ=environ or {"OPENAI_API_KEY": PLANTED_KEY, "ANTHROPIC_API_KEY": PLANTED_KEY}
    )
    return (lambda m: factories[m.provider](m)), (lambda m: request([user("Hi")], model=m.model))


async def run_ladder(client, chain, **kw):
    provider_for, request_for = ladder_parts(client)
    reports: list = []
    events = []
    async for event in stream_with_fallbacks(
        chain, provider_for, request_for, on_event=reports.append, **kw
    ):
        events.append(event)
    return events, reports


async def test_429_with_retry_after_then_success(client, replay):
    replay.queue(
        Reply.json(
            {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}},
            429,
            **{"retry-after": "0.02"},
        ),
        OPENAI_TEXT.reply(),
    )
    sleeps = Sleeps()
    chain = models(replay, ("gpt", "openai"))

    events, reports = await run_ladder(client, chain, policy=FAST, sleep=sleeps)

    assert "2869461" in "".join(getattr(e, "text", "") for e in events).replace(",", "")
    assert len(replay.requests) == 2
    assert sleeps.delays[0] >= 0.02  # the vendor asked for longer than our backoff
    kinds = [type(r).__name__ for r in reports]
    assert kinds == ["AttemptStarted", "AttemptFailed", "AttemptStarted", "AttemptSucceeded"]
    failed = reports[1]
    assert isinstance(failed, AttemptFailed) and failed.error.code == "rate_limit"
    assert failed.retry_in == sleeps.delays[0]
    assert reports[3].attempt.model_attempt == 2 and reports[3].finish is not None


async def test_5xx_on_primary_then_fallback_model_answers(client, replay):
    overloaded = {"error": {"message": "The server had an error", "type": "server_error"}}
    replay.queue(Reply.json(overloaded, 500), Reply.json(overloaded, 502), ANTHROPIC_TEXT.reply())
    chain = models(replay, ("gpt", "openai"), ("claude", "anthropic"))
    sleeps = Sleeps()

    events, reports = await run_ladder(client, chain, policy=FAST, sleep=sleeps)

    assert "".join(getattr(e, "text", "") for e in events) == "- Captain\n- Scoop"
    assert [r.path for r in replay.requests] == ["/v1/chat/completions"] * 2 + ["/v1/messages"]
    [fallback] = [r for r in reports if isinstance(r, FallbackTriggered)]
    assert (fallback.from_model.name, fallback.to_model.name) == ("gpt", "claude")
    assert fallback.error is not None and fallback.error.status == 502
    started = [r.attempt for r in reports if isinstance(r, AttemptStarted)]
    assert [(a.model.name, a.number, a.model_attempt, a.is_fallback) for a in started] == [
        ("gpt", 1, 1, False),
        ("gpt", 2, 2, False),
        ("claude", 3, 1, True),
    ]
    assert len(sleeps.delays) == 1  # one backoff between the two primary attempts


async def test_non_retryable_error_skips_the_second_attempt_but_not_the_fallback(client, replay):
    [bad] = recordings.cassette("openai/chat_error_400_unsupported_value.yaml")
    replay.queue(bad.reply(), ANTHROPIC_TEXT.reply())
    chain = models(replay, ("o1", "openai"), ("claude", "anthropic"))

    events, reports = await run_ladder(client, chain, policy=FAST, sleep=Sleeps())

    assert len(replay.requests) == 2
    assert [type(r).__name__ for r in reports] == [
        "AttemptStarted",
        "AttemptFailed",
        "FallbackTriggered",
        "AttemptStarted",
        "AttemptSucceeded",
    ]
    assert reports[1].retry_in is None


async def test_all_attempts_fail(client, replay):
    replay.queue(*[Reply.json({"error": {"message": "down"}}, 503)] * 4)
    chain = models(replay, ("gpt", "openai"), ("gpt-b", "openai"))

    with pytest.raises(AdapterError) as caught:
        await run_ladder(client, chain, policy=FAST, sleep=Sleeps())

    assert caught.value.message.startswith(
        "All retry attempts exhausted for model gpt and 1 fallbacks"
    )
    assert caught.value.code == "overloaded" and not caught.value.retryable
    assert len(replay.requests) == 4


async def test_failure_after_tokens_reached_the_caller_is_not_retried(client, replay):
    replay.queue(
        OPENAI_TEXT.reply(chunk_size=300).cut_after(3), OPENAI_TEXT.reply()
    )  # a retry would succeed: it must not happen
    chain = models(replay, ("gpt", "openai"), ("gpt-b", "openai"))
    seen: list[str] = []
    provider_for, request_for = ladder_parts(client)

    with pytest.raises(PartialResponseError) as caught:
        async for event in stream_with_fallbacks(
            chain, provider_for, request_for, policy=FAST, sleep=Sleeps()
        ):
            seen.append(getattr(event, "text", ""))

    assert len(replay.requests) == 1
    assert caught.value.partial_text == "".join(seen) != ""
    assert caught.value.code == "network" and not caught.value.retryable
    assert "not retried" in caught.value.message


async def test_stall_moves_to_the_next_model_without_in_place_retry(client, replay):
    stalled = OPENAI_TEXT.reply(chunk_size=None)  # the whole stream in one chunk …
    stalled.delay = 2.0  # … after a pause longer than the first-chunk guard
    replay.queue(stalled, ANTHROPIC_TEXT.reply())
    chain = models(replay, ("gpt", "openai"), ("claude", "anthropic"))
    policy = RetryPolicy(base_delay=0.001, first_chunk_timeout=0.5, stall_timeout=0.5)

    events, reports = await run_ladder(client, chain, policy=policy, sleep=Sleeps())

    [failed] = [r for r in reports if isinstance(r, AttemptFailed)]
    assert failed.error.code == "timeout" and failed.retry_in is None
    assert [r.path for r in replay.requests] == ["/v1/chat/completions", "/v1/messages"]
    assert "".join(getattr(e, "text", "") for e in events) == "- Captain\n- Scoop"


async def test_run_with_fallbacks_around_the_engine_attempt(client, replay):
    """The engine's own unit (``run_attempt``) inside the ladder, one log per attempt."""
    replay.queue(
        Reply.json({"error": {"message": "busy", "type": "overloaded_error"}}, 529),
        ANTHROPIC_TEXT.reply(),
    )
    chain = models(replay, ("claude", "anthropic"))
    provider_for, request_for = ladder_parts(client)
    streamed: list[str] = []
    log: list[tuple[int, str]] = []

    async def attempt(ctx):
        def on_text(text: str) -> None:
            ctx.deliver_text(text)
            streamed.append(text)

        provider = GuardedProvider(provider_for(ctx.model), FAST)
        try:
            reply = await run_attempt(provider, request_for(ctx.model), on_text=on_text)
        except ProviderError as error:
            log.append((ctx.number, error.code))
            raise
        log.append((ctx.number, "ok"))
        return reply

    reply = await run_with_fallbacks(chain, attempt, policy=FAST, sleep=Sleeps())

    assert reply.content == "- Captain\n- Scoop" == "".join(streamed)
    assert log == [(1, "overloaded"), (2, "ok")]


@pytest.mark.parametrize(
    ("error", "attempt", "expected"),
    [
        (AdapterError("x", "rate_limit", 429, True), 1, 1.0),
        (AdapterError("x", "rate_limit", 429, True, retry_after=3.5), 1, 3.5),
        (AdapterError("x", "rate_limit", 429, True, retry_after=600), 1, None),  # too long: move on
        (AdapterError("x", "overloaded", 529, True), 2, None),  # second attempt was the last
        (AdapterError("x", "timeout", None, True), 1, None),
        (AdapterError("x", "invalid_request", 400, False), 1, None),
    ],
)
def test_retry_delay(error, attempt, expected):
    assert retry_delay(error, attempt, RetryPolicy(jitter=0.0)) == expected


def test_backoff_grows_exponentially_with_bounded_jitter():
    policy = RetryPolicy(attempts_per_model=4, jitter=0.1)
    error = AdapterError("x", "overloaded", 503, True)
    assert [retry_delay(error, n, policy, rand=lambda: 0.5) for n in (1, 2, 3)] == [1.05, 2.1, 4.2]
