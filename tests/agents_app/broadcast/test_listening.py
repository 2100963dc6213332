"""``broadcast.listening``: a server process's Pub/Sub readers stay in their waiting read
once its last socket closed (issue #39), on a real Redis through channels_redis' layer.

channels_redis' reader sleeps 0.1 s per turn while its shard holds no subscription, so the
next socket's first frames waited up to 100 ms unread; ``keep_listening`` holds one
subscription per shard for the life of the layer. What decides the reader's branch is the
shard's ``subscribed``: these tests hold that, not a time.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from importlib.metadata import version

import pytest
from channels.layers import InMemoryChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer

from agents_app.broadcast import listening
from agents_app.broadcast.publisher import pubsub_loop_layer

REDIS = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def new_layer() -> RedisPubSubChannelLayer:
    return RedisPubSubChannelLayer(hosts=[REDIS], prefix=f"listen-{uuid.uuid4().hex[:8]}")


async def socket_comes_and_goes(layer: RedisPubSubChannelLayer) -> None:
    """A socket's channel subscribes, gets one frame and leaves, as a consumer does."""
    channel = await layer.new_channel()
    await layer.group_add("thread", channel)
    await layer.group_send("thread", {"type": "thread.frame", "n": 1})
    assert (await layer.receive(channel))["n"] == 1
    await layer.group_discard("thread", channel)
    shard = pubsub_loop_layer(layer)._get_shard(channel)  # type: ignore[union-attr]
    await shard.unsubscribe(channel)
    # redis-py drops a channel from ``subscribed`` once the reader has read the server's
    # confirmation: wait for that, so the reader has made its turn.
    async with asyncio.timeout(10):
        while any(s._pubsub.pending_unsubscribe_channels for s in shards(layer)):
            await asyncio.sleep(0.01)


def shards(layer: RedisPubSubChannelLayer) -> list:  # type: ignore[type-arg]
    return list(pubsub_loop_layer(layer)._shards)  # type: ignore[union-attr]


async def test_a_shard_whose_last_socket_left_keeps_its_reader_waiting_for_data() -> None:
    layer = new_layer()
    await listening.keep_listening(layer)
    await socket_comes_and_goes(layer)
    # The reader's branch: subscribed -> get_message (answers when data arrives);
    # otherwise a 0.1 s sleep before it looks again.
    assert all(shard._pubsub.subscribed for shard in shards(layer))
    # The next socket gets its frames (the kept channel takes none of them).
    channel = await layer.new_channel()
    await layer.group_add("thread", channel)
    await layer.group_send("thread", {"type": "thread.frame", "n": 2})
    assert (await layer.receive(channel))["n"] == 2
    await layer.flush()


async def test_without_it_the_shard_is_left_unsubscribed() -> None:
    """The condition the module exists for (if channels_redis stops unsubscribing an idle
    shard, this fails and the module can go)."""
    layer = new_layer()
    await socket_comes_and_goes(layer)
    assert not any(shard._pubsub.subscribed for shard in shards(layer))
    await layer.flush()


async def test_each_shard_is_kept_once_and_again_after_a_flush() -> None:
    layer = new_layer()
    for _ in range(3):
        await listening.keep_listening(layer)
    kept = [
        name
        for shard in shards(layer)
        for name in shard._subscribed_to
        if listening.KEEP_PREFIX in name
    ]
    assert len(kept) == len(shards(layer)) == 1
    await layer.flush()  # a new Pub/Sub client: subscribed anew
    await listening.keep_listening(layer)
    assert all(shard._pubsub.subscribed for shard in shards(layer))
    await layer.flush()


async def test_other_layers_are_left_alone() -> None:
    layer = InMemoryChannelLayer()
    await listening.keep_listening(layer)
    assert layer.channels == {}


@pytest.mark.parametrize("reliance", sorted(listening.RELIES_ON))
def test_channels_redis_is_the_version_the_module_was_written_for(reliance: str) -> None:
    library, pinned = listening.RELIES_ON[reliance]
    installed = version(library)
    assert installed == pinned, (
        f"re-check {reliance!r} (agents_app/broadcast/listening.py) against {library} "
        f"{installed}: read RedisSingleShardConnection._do_receiving, re-run "
        f"bench/first_token_bench.py, then move the pin (written for {pinned})"
    )
