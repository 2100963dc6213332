"""``BatchPublisher`` on a real Redis through channels_redis' Pub/Sub layer (issue #21).

Frames of many groups, handed over at once, leave in few batches (not one round trip
each), every frame arrives, and each group's frames arrive in the order they were handed
over. A batch is one write whose replies share one timeout. A Redis that is gone drops the
frames (logged) without raising into the sender; one that restarted gets the next batch.
"""

from __future__ import annotations

import asyncio
import math
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio
from channels_redis.pubsub import RedisPubSubChannelLayer
from redis.asyncio.connection import AbstractConnection

from agents_app.broadcast.publisher import BatchPublisher, pubsub_loop_layer
from tests.integration.stack import RedisServer

REDIS = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
GROUPS = 20
FRAMES = 30


async def test_frames_of_many_groups_leave_in_few_batches_in_order_per_group() -> None:
    layer = RedisPubSubChannelLayer(hosts=[REDIS], prefix=f"pub-{uuid.uuid4().hex[:8]}")
    assert pubsub_loop_layer(layer) is not None  # the pipeline path, not the fallback
    groups = [f"g{i}" for i in range(GROUPS)]
    channels = {}
    for group in groups:
        channels[group] = await layer.new_channel()
        await layer.group_add(group, channels[group])
    publisher = BatchPublisher(layer)

    async def sender(group: str) -> None:
        for n in range(FRAMES):
            await publisher.group_send(group, {"type": "thread.frame", "n": n, "g": group})

    await asyncio.gather(*(sender(g) for g in groups))
    received = {g: [] for g in groups}
    for group, channel in channels.items():
        for _ in range(FRAMES):
            message = await asyncio.wait_for(layer.receive(channel), 10)
            assert message["g"] == group
            received[group].append(message["n"])
    assert all(numbers == list(range(FRAMES)) for numbers in received.values())
    assert publisher.frames == GROUPS * FRAMES
    # Twenty senders at once: each batch carries a frame of (nearly) every group.
    assert publisher.batches <= FRAMES * 2
    await layer.flush()


async def test_a_gone_redis_drops_the_batch_without_raising(caplog) -> None:  # type: ignore[no-untyped-def]
    layer = RedisPubSubChannelLayer(
        hosts=[{"address": "redis://127.0.0.1:1/0", "socket_connect_timeout": 1}],
        prefix="gone",
    )
    publisher = BatchPublisher(layer)
    await asyncio.gather(*(publisher.group_send("g", {"type": "x", "n": n}) for n in range(5)))
    assert publisher.frames == 5
    assert "5 live frames dropped" in caplog.text
    # The next batch tries again (nothing is stuck behind the failed one).
    await publisher.group_send("g", {"type": "x"})
    assert publisher.batches == 2


async def test_a_frame_that_cannot_be_encoded_is_dropped_and_the_others_still_go(
    caplog,  # type: ignore[no-untyped-def]
) -> None:
    from channels.layers import get_channel_layer

    from agents_app.broadcast.events import asend_thread_frames, thread_group

    layer = get_channel_layer()  # the in-memory layer of the unit settings
    channel = await layer.new_channel()
    await layer.group_add(thread_group("t-enc"), channel)
    frames = [
        {"type": "event", "n": 1},
        {"type": "event", "bad": object()},
        {"type": "event", "n": 3},
    ]
    await asend_thread_frames("t-enc", frames)  # must not raise
    first = await asyncio.wait_for(layer.receive(channel), 5)
    second = await asyncio.wait_for(layer.receive(channel), 5)
    assert [first["meta"]["type"], second["meta"]["type"]] == ["event", "event"]
    assert '"n":1' in first["text"] and '"n":3' in second["text"]
    assert "live frame to thread t-enc dropped" in caplog.text


async def test_a_batch_is_one_write_and_its_replies_share_one_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writes: list[Any] = []
    read_timeouts: list[tuple[Any, Any]] = []
    real_send, real_read = (
        AbstractConnection.send_packed_command,
        AbstractConnection.read_response,
    )

    async def send_packed_command(self, command, check_health=True):  # type: ignore[no-untyped-def]
        writes.append(self)
        return await real_send(self, command, check_health)

    async def read_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        read_timeouts.append((self, kwargs.get("timeout")))
        return await real_read(self, *args, **kwargs)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", send_packed_command)
    monkeypatch.setattr(AbstractConnection, "read_response", read_response)
    layer = RedisPubSubChannelLayer(hosts=[REDIS], prefix=f"one-{uuid.uuid4().hex[:8]}")
    channel = await layer.new_channel()
    await layer.group_add("g", channel)
    publisher = BatchPublisher(layer)
    await publisher.group_send("g", {"type": "x", "n": -1})  # connects (its set-up writes)
    assert (await asyncio.wait_for(layer.receive(channel), 10))["n"] == -1
    # The publishing connection (the subscriber's has a pool of its own).
    loop_layer = pubsub_loop_layer(layer)
    assert loop_layer is not None
    shard = loop_layer._get_shard(loop_layer._get_group_channel_name("g"))
    (publishing,) = shard._redis.connection_pool._available_connections
    writes.clear()
    read_timeouts.clear()
    await asyncio.gather(*(publisher.group_send("g", {"type": "x", "n": n}) for n in range(40)))
    sent = [conn for conn in writes if conn is publishing]
    replies = [timeout for conn, timeout in read_timeouts if conn is publishing]
    numbers = [(await asyncio.wait_for(layer.receive(channel), 10))["n"] for _ in range(40)]
    assert numbers == list(range(40))
    assert len(sent) == publisher.batches - 1
    # One reply per frame, none read under a timeout of its own (redis-py's pipeline read
    # each with the connection's socket_timeout: an asyncio.timeout per frame).
    assert replies == [math.inf] * 40
    await layer.flush()


async def test_a_batch_after_a_redis_restart_goes_out_on_a_new_connection(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer(tmp_path).start()
    listener = None
    try:
        layer = RedisPubSubChannelLayer(hosts=[server.url], prefix="restart")
        publisher = BatchPublisher(layer)
        await publisher.group_send("g", {"type": "x", "n": 0})  # a pooled connection now
        server.stop()
        server.start()  # same port: the pooled connection is closed by a server now gone
        listener = redis.asyncio.Redis.from_url(server.url)
        subscription = listener.pubsub()
        loop_layer = pubsub_loop_layer(layer)
        assert loop_layer is not None
        await subscription.subscribe(loop_layer._get_group_channel_name("g"))
        await publisher.group_send("g", {"type": "x", "n": 1})
        while True:
            message = await subscription.get_message(timeout=10)
            assert message is not None, "the batch after the restart never arrived"
            if message["type"] == "message":
                break
        assert layer.deserialize(message["data"])["n"] == 1
        assert "dropped" not in caplog.text
        await subscription.aclose()
    finally:
        if listener is not None:
            await listener.aclose()
        server.stop()


async def test_a_groups_frames_handed_over_together_travel_as_one_message_in_order() -> None:
    """A run of one group's ``thread.frame`` messages in a batch is one PUBLISH
    (``thread.frames``); another message type keeps its place between runs, a lone frame
    goes as it is, and other groups get their own message."""
    layer = RedisPubSubChannelLayer(hosts=[REDIS], prefix=f"runs-{uuid.uuid4().hex[:8]}")
    channels = {}
    for group in ("a", "b"):
        channels[group] = await layer.new_channel()
        await layer.group_add(group, channels[group])
    publisher = BatchPublisher(layer)
    sent = [
        publisher.queue("a", {"type": "thread.frame", "n": 1}),
        publisher.queue("b", {"type": "thread.frame", "n": 2}),
        publisher.queue("a", {"type": "thread.frame", "n": 3}),
        publisher.queue("a", {"type": "other.kind", "n": 4}),
        publisher.queue("a", {"type": "thread.frame", "n": 5}),
    ]
    await asyncio.gather(*sent)
    assert (publisher.frames, publisher.messages, publisher.batches) == (5, 4, 1)

    async def received(group: str) -> list[Any]:
        message = await asyncio.wait_for(layer.receive(channels[group]), 10)
        if message["type"] == "thread.frames":
            return [message["type"], [event["n"] for event in message["events"]]]
        return [message["type"], message["n"]]

    assert [await received("a") for _ in range(3)] == [
        ["thread.frames", [1, 3]],
        ["other.kind", 4],
        ["thread.frame", 5],
    ]
    assert await received("b") == ["thread.frame", 2]
    await layer.flush()
