"""``agents_app.sockets.consumer_loop.dispatch_from``: a consumer's receive loop (issue #21)."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest
from channels.exceptions import StopConsumer

from agents_app.sockets.consumer_loop import dispatch_from


class Source:
    """A source like a socket's ``receive`` or the channel layer's: an awaitable per
    message, read only when asked; ``closed`` records that a cancelled read cleaned up."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.reads = 0
        self.closed = False

    async def __call__(self) -> Any:
        self.reads += 1
        try:
            item = await self.queue.get()
        except asyncio.CancelledError:
            self.closed = True
            raise
        if isinstance(item, BaseException):
            raise item
        return item


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_messages_of_each_source_are_dispatched_in_order_one_at_a_time() -> None:
    client, layer = Source(), Source()
    seen: list[Any] = []
    running = 0

    async def dispatch(message: Any) -> None:
        nonlocal running
        running += 1
        assert running == 1, "two handlers ran at once"
        await asyncio.sleep(0)  # a handler that awaits (a socket send)
        seen.append(message)
        running -= 1
        if message == "stop":
            raise StopConsumer

    loop = asyncio.create_task(dispatch_from([client, layer], dispatch))
    for n in range(20):
        layer.queue.put_nowait(f"frame {n}")
        if n % 5 == 0:
            client.queue.put_nowait(f"ping {n}")
    async with asyncio.timeout(5):
        while len(seen) < 24:
            await asyncio.sleep(0.001)
    client.queue.put_nowait("stop")
    with pytest.raises(StopConsumer):
        await asyncio.wait_for(loop, 5)
    assert [m for m in seen if m.startswith("frame")] == [f"frame {n}" for n in range(20)]
    assert [m for m in seen if m.startswith("ping")] == [f"ping {n}" for n in range(0, 20, 5)]
    assert seen[-1] == "stop"


async def test_a_source_is_not_read_again_before_its_message_is_taken() -> None:
    layer = Source()
    release = asyncio.Event()

    async def dispatch(message: Any) -> None:
        await release.wait()

    loop = asyncio.create_task(dispatch_from([layer], dispatch))
    for n in range(5):
        layer.queue.put_nowait(n)
    await settle()
    # One message in the handler, one waiting to be handed over, the pump's read of a
    # third parked until there is room: the rest stay in the source.
    assert layer.queue.qsize() == 2
    assert layer.reads == 3
    release.set()
    await settle()
    assert layer.queue.qsize() == 0
    loop.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop


async def test_handlers_run_in_the_consumers_task_and_context() -> None:
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    client, layer = Source(), Source()
    tasks: set[asyncio.Task[Any] | None] = set()
    values: list[str] = []

    async def dispatch(message: Any) -> None:
        tasks.add(asyncio.current_task())
        values.append(marker.get())
        marker.set(message)  # what one handler sets, the next one sees

    async def consumer() -> None:
        marker.set("consumer")
        await dispatch_from([client, layer], dispatch)

    loop = asyncio.create_task(consumer())
    await settle()
    client.queue.put_nowait("a")
    await settle()
    layer.queue.put_nowait("b")
    await settle()
    client.queue.put_nowait("c")
    await settle()
    assert tasks == {loop}
    assert values == ["consumer", "a", "b"]
    loop.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop


async def test_a_failing_source_ends_the_loop_with_its_error_and_cancels_the_others() -> None:
    client, layer = Source(), Source()
    handled: list[Any] = []

    async def dispatch(message: Any) -> None:
        handled.append(message)

    loop = asyncio.create_task(dispatch_from([client, layer], dispatch))
    layer.queue.put_nowait("frame")
    await settle()
    client.queue.put_nowait(RuntimeError("socket broke"))
    with pytest.raises(RuntimeError, match="socket broke"):
        await asyncio.wait_for(loop, 5)
    assert handled == ["frame"]
    assert layer.closed, "the channel layer's read was not cancelled"


async def test_a_handler_error_ends_the_loop_and_cancels_every_read() -> None:
    client, layer = Source(), Source()

    async def dispatch(message: Any) -> None:
        raise ValueError(f"no handler for {message}")

    loop = asyncio.create_task(dispatch_from([client, layer], dispatch))
    layer.queue.put_nowait("odd")
    with pytest.raises(ValueError, match="no handler for odd"):
        await asyncio.wait_for(loop, 5)
    assert client.closed and layer.closed


async def test_cancelling_the_consumer_cancels_every_read() -> None:
    client, layer = Source(), Source()

    async def dispatch(message: Any) -> None:
        return None

    loop = asyncio.create_task(dispatch_from([client, layer], dispatch))
    await settle()
    loop.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop
    assert client.closed and layer.closed
