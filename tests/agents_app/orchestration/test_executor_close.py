"""The in-process executor ends its sessions and its sweep when closed (the test run closes
it before dropping its database, where the sweep would otherwise wake and fail)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import CancelledError
from typing import Any

import pytest

from agents_app.orchestration.executor import InProcessExecutor


def _session_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "studio-sessions"]


def test_close_cancels_the_running_jobs_and_the_sweep_and_stops_its_own_loop(
    settings: Any,
) -> None:
    settings.STUDIO_SESSION_SWEEP_SECONDS = 3600
    before = set(_session_threads())
    executor = InProcessExecutor()
    started = threading.Event()

    async def job() -> None:
        started.set()
        await asyncio.sleep(3600)

    future = executor.submit(job())
    assert started.wait(10)
    loop = executor.running_loop()
    assert loop is not None
    (thread,) = set(_session_threads()) - before

    executor.close()

    with pytest.raises(CancelledError):
        future.result(timeout=10)
    assert not thread.is_alive()
    assert not loop.is_running()
    assert executor.running_loop() is None


def test_close_leaves_a_loop_it_was_handed_running() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        executor = InProcessExecutor()
        executor.bind_loop(loop)
        executor.close()
        assert loop.is_running()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
