"""The embedded mode's channel layer sends a group's messages as channels' in-memory layer
does (same members, order, expiry and full-channel rule) without a task per member; these
fail if a channels release changes what its layer does, or what ours relies on."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer

from agents_app.broadcast.memory_layer import EmbeddedChannelLayer


async def _scenario(layer: Any) -> dict[str, list[Any]]:
    """Members of two groups, one joined long ago (its membership expired), one channel
    full: what each channel holds afterwards."""
    a, b, c, old = [await layer.new_channel() for _ in range(4)]
    for channel in (a, b, c):
        await layer.group_add("thread.1", channel)
    await layer.group_add("thread.2", b)
    await layer.group_add("thread.1", old)
    layer.groups["thread.1"][old] -= layer.group_expiry + 1
    for n in range(layer.capacity):
        await layer.send(c, {"type": "filler", "n": n})
    for n in range(3):
        await layer.group_send("thread.1", {"type": "thread.frame", "n": n})
    await layer.group_send("thread.2", {"type": "thread.frame", "n": "two"})
    await layer.group_send("thread.nobody", {"type": "thread.frame", "n": "lost"})
    held = {}
    for name, channel in (("a", a), ("b", b), ("c", c), ("old", old)):
        queue = layer.channels.get(channel)
        held[name] = [message for _, message in list(queue._queue)] if queue else []
    return held


async def test_a_group_s_messages_reach_the_members_as_channels_own_layer_sends_them() -> None:
    ours, theirs = EmbeddedChannelLayer(capacity=5), InMemoryChannelLayer(capacity=5)
    held = await _scenario(ours)
    assert held == await _scenario(theirs)
    assert [m["n"] for m in held["a"]] == [0, 1, 2]
    assert [m["n"] for m in held["b"]] == [0, 1, 2, "two"]
    assert [m["type"] for m in held["c"]] == ["filler"] * 5  # full: dropped for c alone
    assert held["old"] == []


async def test_a_group_send_makes_no_task() -> None:
    layer = EmbeddedChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("thread.1", channel)
    made: list[Any] = []
    loop = asyncio.get_running_loop()
    factory = loop.get_task_factory()
    loop.set_task_factory(lambda lp, coro, **kw: made.append(coro) or asyncio.Task(coro, loop=lp))
    try:
        await layer.group_send("thread.1", {"type": "thread.frame"})
        await layer.group_send("thread.nobody", {"type": "thread.frame"})
    finally:
        loop.set_task_factory(factory)
    assert made == []
    assert (await layer.receive(channel)) == {"type": "thread.frame"}


def test_the_embedded_mode_uses_it() -> None:
    from studio import settings as studio_settings

    assert studio_settings.EMBEDDED  # the unit tests run embedded
    assert type(get_channel_layer()) is EmbeddedChannelLayer


async def test_a_group_nobody_watches_skips_the_clean_up_pass() -> None:
    layer = EmbeddedChannelLayer()
    passes: list[int] = []
    layer._clean_expired = lambda: passes.append(1)  # O(channels + members) each time
    await layer.group_send("thread.nobody", {"type": "thread.frame"})
    assert passes == []
    await layer.group_add("thread.1", await layer.new_channel())
    await layer.group_send("thread.1", {"type": "thread.frame"})
    assert passes == [1]  # a watched group's send still expires what is old first
