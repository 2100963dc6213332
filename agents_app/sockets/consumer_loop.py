"""A consumer's receive loop without a new task per message.

Channels' ``await_many_dispatch`` waits on a socket's two sources (the client's messages
and the channel layer) with ``asyncio.wait``, and after each message makes a new task
for the source that delivered it. For a relaying socket that is one task, one waiter
future and four done-callbacks per frame: ~12% of a sockets' Daphne's GIL time at 200
streaming sessions (issue #21, thirteenth round). Here each source has one long-lived
pump task that hands what it receives to the consumer's own task through a queue of
one: the handlers still run one at a time, in the consumer's task (so its context
variables are the same for every handler), in the order the sources delivered, and a
source is not read again until its previous message has been taken, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

Source = Callable[[], Awaitable[Any]]


async def _pump(source: Source, handoff: asyncio.Queue[tuple[bool, Any]]) -> None:
    try:
        while True:
            await handoff.put((True, await source()))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - raised again in the consumer's task
        await handoff.put((False, exc))


async def dispatch_from(
    sources: Sequence[Source], dispatch: Callable[[Any], Awaitable[Any]]
) -> None:
    """Receive from every source and ``dispatch`` each message, one at a time, until a
    source or a handler raises (``StopConsumer`` included) or the caller is cancelled."""
    handoff: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue(maxsize=1)
    pumps = [asyncio.ensure_future(_pump(source, handoff)) for source in sources]
    try:
        while True:
            received, value = await handoff.get()
            if not received:
                raise value
            await dispatch(value)
    finally:
        for pump in pumps:
            pump.cancel()
        # A source cleans up when cancelled (the Pub/Sub layer unsubscribes the channel).
        await asyncio.gather(*pumps, return_exceptions=True)
