"""Bounded waits for what another process or task finishes: poll a check until it holds, and
fail with what was awaited (and the last error) when the time is up, never hang."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any


def wait_until(check: Any, what: str, timeout: float = 30.0, interval: float = 0.1) -> Any:
    """Poll ``check()`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except Exception as exc:  # the service may not be up yet
            last_error = exc
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what} (last error: {last_error})"
    )


async def await_until(
    check: Callable[[], Awaitable[Any]], what: str, timeout: float = 10.0, interval: float = 0.05
) -> Any:
    """``wait_until`` for a check that is a coroutine, sleeping without blocking the loop."""
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what} (last: {result!r})"
            )
        await asyncio.sleep(interval)
