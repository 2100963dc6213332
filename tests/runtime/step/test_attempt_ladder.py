"""The attempt ladder in the engine: retries, fallbacks, one log per attempt, partial replies.

Reference §4.8: two attempts per model, then each fallback model in order; one
log row per attempt (``attempt``, ``retry_of_id``); ``llm_request`` per attempt
and ``fallback_triggered`` on a switch; no silent retry once tokens reached
the user. Backoffs are recorded by the world, never waited for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from runtime.core.spec import ModelDefinition
from runtime.providers.base import (
    Finish,
    ProviderError,
    ProviderRequest,
    StreamEvent,
    TextDelta,
    Usage,
)
from runtime.providers.pricing import thread_cost
from runtime.providers.retry import RetryPolicy
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import LogQuery, LogRecord
from tests.runtime.conftest import World, agent, prompt


async def _logs(world: World, thread_id: str) -> list[LogRecord]:
    return await world.store.list_logs(thread_id, LogQuery(limit=None, kind="llm"))


def _frames(world: World, thread_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in f.items() if k not in ("type", "timestamp")}
        for f in world.sink.of_type(thread_id, kind)
    ]


def _with_fallback(world: World, primary: TestScript, backup: TestScript, **prices: Any) -> None:
    world.script("backup", backup)
    world.script("m", primary)
    world.define(
        ModelDefinition(
            name="backup", provider="test", model="scripted-backup", **prices.get("backup", {})
        ),
        ModelDefinition(
            name="m", provider="test", model="scripted", fallbacks=["backup"], **prices.get("m", {})
        ),
        prompt(),
        agent(),
    )


async def test_a_retryable_error_is_retried_on_the_same_model_after_a_backoff(world: World) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_error("Overloaded", "overloaded", 529).add_text("Hello!"))

    thread, result = await world.chat("hi")

    assert result.stop_reason == "stop_on_response" and result.final_text == "Hello!"
    first, second = await _logs(world, thread.id)
    assert (first.attempt, first.error_type, first.status_code, first.is_complete) == (
        1,
        "overloaded",
        529,
        True,
    )
    assert (second.attempt, second.retry_of_id, second.error, second.is_complete) == (
        2,
        first.id,
        "",
        True,
    )
    assert first.message_id == second.message_id and first.model == second.model == "m"
    reply = (await world.messages(thread.id))[-1]
    assert reply.status == "completed" and reply.log_id == second.id
    assert len(world.sleeps) == 1 and 1.0 <= world.sleeps[0] <= 1.1  # 1 s plus ≤10 % jitter
    assert _frames(world, thread.id, "llm_request") == [
        {"model": "m", "attempt": 1},
        {"model": "m", "attempt": 2},
    ]
    assert _frames(world, thread.id, "fallback_triggered") == []


async def test_I10_two_failures_then_the_fallback_answers(world: World) -> None:
    _with_fallback(
        world,
        TestScript().add_error("busy", "overloaded", 529).add_error("busy", "overloaded", 529),
        TestScript().add_text("From the backup."),
    )

    thread, result = await world.chat("hi")

    assert result.final_text == "From the backup."
    logs = await _logs(world, thread.id)
    assert [(log.model, log.model_id, log.attempt) for log in logs] == [
        ("m", "scripted", 1),
        ("m", "scripted", 2),
        ("backup", "scripted-backup", 3),
    ]
    assert [log.retry_of_id for log in logs] == [None, logs[0].id, logs[1].id]
    assert [log.error_type for log in logs] == ["overloaded", "overloaded", ""]
    assert _frames(world, thread.id, "fallback_triggered") == [{"from": "m", "to": "backup"}]
    assert _frames(world, thread.id, "llm_request")[-1] == {"model": "backup", "attempt": 3}
    assert world.requests("backup")[0].model == "scripted-backup"
    assert (await world.messages(thread.id))[-1].log_id == logs[2].id


async def test_a_non_retryable_error_skips_the_second_attempt_but_not_the_fallback(
    world: World,
) -> None:
    _with_fallback(
        world,
        TestScript().add_error("context too long", "context_too_long", 400),
        TestScript().add_text("Bigger window."),
    )

    thread, result = await world.chat("hi")

    assert result.final_text == "Bigger window." and world.sleeps == []
    assert [(log.model, log.attempt) for log in await _logs(world, thread.id)] == [
        ("m", 1),
        ("backup", 2),
    ]


async def test_scripts_replay_per_thread_and_model_across_fallbacks(world: World) -> None:
    """Each attempt consumes one response of its model: the scripts' cursors stay right
    in the next session (they are counted from the stored logs)."""
    _with_fallback(
        world,
        TestScript().add_error("bad", "invalid_request", 400).add_text("Back on the primary."),
        TestScript().add_text("Backup, once."),
    )
    thread, first = await world.chat("one")
    second = await world.run(thread.id, "two")

    assert (first.final_text, second.final_text) == ("Backup, once.", "Back on the primary.")
    assert [r.sequence for r in world.requests("m")] == [0, 1]
    assert [r.sequence for r in world.requests("backup")] == [0]
    assert await world.store.count_llm_responses(thread.id, "m") == 2


async def test_exhausted_ladder_fails_the_message_and_names_every_model(world: World) -> None:
    _with_fallback(
        world,
        TestScript()
        .add_error("busy", "overloaded", 529)
        .add_error("still busy", "overloaded", 529),
        TestScript().add_error("no", "rate_limit", 429).add_error("no again", "rate_limit", 429),
    )

    thread, result = await world.chat("hi")

    assert result.stop_reason == "step_error"
    assert "All retry attempts exhausted for model m and 1 fallbacks: no again" in (
        result.detail or ""
    )
    logs = await _logs(world, thread.id)
    assert [log.error for log in logs] == ["busy", "still busy", "no", "no again"]
    assert all(log.is_complete for log in logs)
    reply = (await world.messages(thread.id))[-1]
    assert reply.status == "failed" and reply.log_id == logs[-1].id
    assert reply.metadata["error"]["code"] == "rate_limit"
    assert len(world.sleeps) == 2  # one backoff per model


class _Scripted:
    """A provider whose attempts are written in code (for failures the script cannot express)."""

    name = "test"

    def __init__(self, *attempts: Any) -> None:
        self.attempts = list(attempts)
        self.requests: list[ProviderRequest] = []

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        for item in self.attempts.pop(0)(request):
            if isinstance(item, ProviderError):
                raise item
            yield item


def _pin(world: World, provider: _Scripted) -> None:
    world.define(ModelDefinition(name="m", provider="test", model="x"), prompt(), agent())
    world.providers.override("m", provider)


async def test_a_failure_after_tokens_reached_the_user_is_final_and_keeps_the_partial_text(
    world: World,
) -> None:
    cut = ProviderError("connection reset", "network", retryable=True)
    provider = _Scripted(lambda _r: [TextDelta("Half an ans"), TextDelta("wer"), cut])
    _pin(world, provider)

    thread, result = await world.chat("hi")

    assert result.stop_reason == "step_error" and len(provider.requests) == 1
    reply = (await world.messages(thread.id))[-1]
    assert (reply.status, reply.content) == ("failed", "Half an answer")
    assert reply.metadata["error"]["code"] == "network"
    assert "not retried" in reply.metadata["error"]["message"]
    [log] = await _logs(world, thread.id)
    assert log.error_type == "network" and log.is_complete
    assert log.response_body is not None and log.response_body["partial_text"] == "Half an answer"
    chunks = [f["chunk"] for f in world.sink.of_type(thread.id, "message_chunk")]
    assert chunks == ["Half an ans", "wer"]
    assert world.sleeps == []


async def test_the_vendors_retry_after_sets_the_backoff(world: World) -> None:
    limited = ProviderError("slow down", "rate_limit", 429, True, retry_after=7.5)
    done = [TextDelta("ok"), Finish("stop", Usage(1, 1))]
    _pin(world, _Scripted(lambda _r: [limited], lambda _r: done))

    _, result = await world.chat("hi")

    assert result.final_text == "ok" and world.sleeps == [7.5]


async def test_a_stop_between_attempts_ends_the_ladder(world: World) -> None:
    def fail_and_stop(request: ProviderRequest) -> list[Any]:
        world.harness.press_stop(request.metadata["thread_id"])
        return [ProviderError("busy", "overloaded", 529, True)]

    provider = _Scripted(fail_and_stop, lambda _r: [TextDelta("never")])
    _pin(world, provider)

    thread, result = await world.chat("hi")

    assert result.stop_reason == "aborted_by_user" and len(provider.requests) == 1
    [log] = await _logs(world, thread.id)
    assert log.error_type == "overloaded" and log.is_complete
    assert (await world.messages(thread.id))[-1].status == "failed"
    assert world.sleeps == []


async def test_a_stalled_first_chunk_moves_on_to_the_fallback(world: World) -> None:
    _with_fallback(
        world,
        TestScript().add_response({"content": "too late", "delayMs": 2000}),
        TestScript().add_text("On time."),
    )
    world.engine.deps.limits.retry = RetryPolicy(first_chunk_timeout=0.05)

    thread, result = await world.chat("hi")

    assert result.final_text == "On time." and world.sleeps == []  # timeouts skip the retry
    assert [(log.model, log.error_type) for log in await _logs(world, thread.id)] == [
        ("m", "timeout"),
        ("backup", ""),
    ]


async def test_thread_cost_is_the_sum_of_every_attempts_log(world: World) -> None:
    usage = {"usage": {"promptTokens": 1000, "completionTokens": 500}}
    _with_fallback(
        world,
        TestScript().add_error("busy", "overloaded", 529).add_response({"content": "a", **usage}),
        TestScript(),
        m={"input_price": 3.0, "output_price": 15.0},
    )
    thread, _ = await world.chat("hi")
    second = await world.run(thread.id, "again")
    assert second.stop_reason == "step_error"  # script exhausted: a logged failure, no cost

    logs = await _logs(world, thread.id)
    assert [log.cost_total for log in logs] == pytest.approx([0.0, 0.0105, 0.0, 0.0])
    assert await thread_cost(world.store, thread.id) == pytest.approx(
        sum(log.cost_total for log in logs)
    )
