"""Frames onto the channel layer in batches: one Redis round trip for many frames.

channels_redis' Pub/Sub layer sends each ``group_send`` as its own ``PUBLISH`` under a
per-shard lock, so a worker streaming hundreds of threads waits one round trip per
frame, one frame at a time: under load the queue of frames behind that lock, not the
CPU, was most of a token's latency. A ``BatchPublisher`` (one per event loop) takes the
frames every sink of the loop has ready and writes them as one command per shard: a
small Lua script that ``PUBLISH``es each (channel, message) pair of its arguments in order
(``EVALSHA``, loaded with ``EVAL`` when Redis does not have it yet). One command and one
reply per batch: with a pipeline of ``PUBLISH`` commands, redis-py packed each command and
parsed each reply in Python, ~9% of a streaming worker's CPU (issue #21, thirteenth
round). A Redis that refuses scripts (an ACL without ``EVALSHA``/``EVAL``, a service that
disables Lua) gets the pipeline instead, from the first refusal on (logged once). While a
batch is in flight the next one gathers, so the batch size follows the load.

Order: frames of one group are published in the order they were handed over (one batch
at a time, in order within a batch). Delivery stays at-most-once, as with ``group_send``:
a failed batch is logged and its frames are lost (consumers see the ``seq`` gap and tell
their clients to reload).

Other layers (in-memory, the core Redis layer) have no pipeline: their frames go through
``group_send`` one by one, in order.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import weakref
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

logger = logging.getLogger(__name__)

# ARGV: channel, message, channel, message, ...
PUBLISH_ALL = """
for i = 1, #ARGV, 2 do
  redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
end
return #ARGV / 2
"""
PUBLISH_ALL_SHA = hashlib.sha1(PUBLISH_ALL.encode()).hexdigest()


class BatchPublisher:
    def __init__(self, layer: Any) -> None:
        self._layer = layer
        self._batch: list[tuple[str, dict[str, Any], asyncio.Future[None]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.batches = 0
        self.frames = 0
        self.scripts = True  # False once Redis refused the script: pipelines from then on

    def queue(self, group: str, message: dict[str, Any]) -> asyncio.Future[None]:
        """Queue one layer message (in call order); the future ends once its batch was
        written or failed (failures are logged here, never raised)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._batch.append((group, message, done))
        if self._runner is None:
            self._runner = loop.create_task(self._run())
        return done

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        await self.queue(group, message)

    async def _run(self) -> None:
        try:
            while self._batch:
                batch, self._batch = self._batch, []
                try:
                    await self._publish(batch)
                except Exception:  # a dropped live frame must never break a session
                    logger.warning("%d live frames dropped", len(batch), exc_info=True)
                self.batches += 1
                self.frames += len(batch)
                for _, _, done in batch:
                    if not done.done():
                        done.set_result(None)
        finally:
            self._runner = None

    async def _publish(self, batch: list[tuple[str, dict[str, Any], asyncio.Future[None]]]) -> None:
        shards = self._per_shard(batch)
        if shards is None:
            for group, message, _ in batch:
                await self._layer.group_send(group, message)
            return
        await asyncio.gather(*(self._publish_on(redis, args) for redis, args in shards))

    async def _publish_on(self, redis: Any, args: list[Any]) -> None:
        if self.scripts:
            try:
                try:
                    await redis.evalsha(PUBLISH_ALL_SHA, 0, *args)
                except NoScriptError:  # a new or restarted Redis: EVAL also caches it
                    await redis.eval(PUBLISH_ALL, 0, *args)
                return
            except ResponseError as exc:  # scripts refused (ACL, Lua disabled)
                self.scripts = False
                logger.warning(
                    "Redis refused the publishing script (%s); live frames go as pipelines", exc
                )
        pipe = redis.pipeline(transaction=False)
        for channel, message in zip(args[::2], args[1::2], strict=True):
            pipe.publish(channel, message)
        await pipe.execute()

    def _per_shard(
        self, batch: list[tuple[str, dict[str, Any], asyncio.Future[None]]]
    ) -> list[tuple[Any, list[Any]]] | None:
        """Each Redis shard's client with its (channel, message, …) arguments, or ``None``
        when the layer is not channels_redis' Pub/Sub layer (its per-loop layer, shards and
        serializer are what ``group_send`` itself uses, so names, hashing and encoding stay
        exactly those of the layer)."""
        loop_layer = pubsub_loop_layer(self._layer)
        if loop_layer is None:
            return None
        shards: dict[int, tuple[Any, list[Any]]] = {}
        for group, message, _ in batch:
            channel = loop_layer._get_group_channel_name(group)
            shard = loop_layer._get_shard(channel)
            found = shards.get(id(shard))
            if found is None:
                shard._ensure_redis()
                found = shards[id(shard)] = (shard._redis, [])
            found[1].extend((channel, self._layer.serialize(message)))
        return list(shards.values())


def pubsub_loop_layer(layer: Any) -> Any | None:
    """channels_redis' per-loop Pub/Sub layer behind ``layer``, if that is what it is."""
    try:
        from channels_redis.pubsub import RedisPubSubChannelLayer, RedisPubSubLoopLayer
    except ImportError:  # pragma: no cover - channels_redis is a dependency
        return None
    if not isinstance(layer, RedisPubSubChannelLayer):
        return None
    loop_layer = layer._get_layer()
    return loop_layer if isinstance(loop_layer, RedisPubSubLoopLayer) else None


_publishers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, BatchPublisher]] = (
    weakref.WeakKeyDictionary()
)


def publisher_for(layer: Any) -> BatchPublisher:
    """The running loop's publisher for ``layer`` (a batch never spans two loops)."""
    loop = asyncio.get_running_loop()
    per_loop = _publishers.setdefault(loop, {})
    publisher = per_loop.get(id(layer))
    if publisher is None or publisher._layer is not layer:
        publisher = per_loop[id(layer)] = BatchPublisher(layer)
    return publisher
