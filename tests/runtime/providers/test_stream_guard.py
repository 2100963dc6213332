"""``watch_stream``'s first-chunk and stall timeouts (one pending timer per stream)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from runtime.providers.errors import AdapterError
from runtime.providers.retry import RetryPolicy, current_task_of, watch_stream


async def _paced(gaps: list[float]) -> AsyncIterator[int]:
    """One item after each gap (seconds)."""
    for i, gap in enumerate(gaps):
        await asyncio.sleep(gap)
        yield i


def _policy(first: float | None, stall: float | None) -> RetryPolicy:
    return RetryPolicy(first_chunk_timeout=first, stall_timeout=stall)  # type: ignore[arg-type]


async def _drain(stream: AsyncIterator[int], pause: float = 0.0) -> list[int]:
    seen = []
    async for item in stream:
        seen.append(item)
        if pause:
            await asyncio.sleep(pause)
    return seen


async def test_a_stream_that_keeps_coming_within_the_limits_is_read_to_its_end() -> None:
    gaps = [0.05] + [0.01] * 30  # longer in all than any one limit
    assert await _drain(watch_stream(_paced(gaps), _policy(0.2, 0.1))) == list(range(31))


async def test_no_first_chunk_within_its_limit_is_a_retryable_timeout() -> None:
    with pytest.raises(AdapterError) as failed:
        await _drain(watch_stream(_paced([0.5]), _policy(0.1, 1.0)))
    assert failed.value.code == "timeout" and failed.value.retryable
    assert "first chunk" in str(failed.value)


async def test_a_stall_after_some_data_is_a_timeout_with_what_came_kept() -> None:
    seen: list[int] = []
    with pytest.raises(AdapterError) as failed:
        async for item in watch_stream(_paced([0.0, 0.01, 0.5]), _policy(1.0, 0.1)):
            seen.append(item)
    assert seen == [0, 1]
    assert failed.value.code == "timeout" and "No data" in str(failed.value)


async def test_the_time_the_consumer_spends_between_reads_does_not_count() -> None:
    gaps = [0.0] * 5
    assert await _drain(watch_stream(_paced(gaps), _policy(0.1, 0.1)), pause=0.25) == [
        0,
        1,
        2,
        3,
        4,
    ]


async def test_a_cancel_from_outside_stays_a_cancel() -> None:
    reader = asyncio.ensure_future(_drain(watch_stream(_paced([5.0]), _policy(10.0, 10.0))))
    await asyncio.sleep(0.05)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader


async def test_no_limits_means_no_timeout() -> None:
    assert await _drain(watch_stream(_paced([0.2, 0.2]), _policy(None, None))) == [0, 1]


async def test_a_stall_is_caught_when_a_later_read_comes_from_another_task() -> None:
    # The guard must cancel the task waiting now, not the one that read the first item.
    stream = watch_stream(_paced([0.0, 5.0]), _policy(1.0, 0.1))
    first = await asyncio.create_task(anext(stream))
    assert first == 0
    second = asyncio.create_task(anext(stream))
    # A liveness bound, far past the 0.1 s limit: a guard that cancels the wrong task
    # never ends this read (the provider would send its next item only after 5 s).
    await asyncio.wait({second}, timeout=3.0)
    if not second.done():
        second.cancel()
    assert second.done() and not second.cancelled()
    failed = second.exception()
    assert isinstance(failed, AdapterError)
    assert failed.code == "timeout" and "No data" in str(failed)


async def test_the_guard_asks_for_the_current_task_the_way_asyncio_answers() -> None:
    loop = asyncio.get_running_loop()
    ask = current_task_of(loop)
    seen: list[object] = []

    async def inside() -> None:
        seen.append(ask() is asyncio.current_task())

    await asyncio.create_task(inside())
    assert seen == [True]
    assert ask() is asyncio.current_task()
    # A plain callback of the loop runs in no task.
    called = loop.create_future()
    loop.call_soon(lambda: called.set_result(ask()))
    assert await called is None
