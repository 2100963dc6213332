"""Frames onto the channel layer in batches: one Redis round trip for many frames.

channels_redis' Pub/Sub layer sends each ``group_send`` as its own ``PUBLISH`` under a
per-shard lock, so a worker streaming hundreds of threads waits one round trip per
frame, one frame at a time: under load the queue of frames behind that lock, not the
CPU, was most of a token's latency. A ``BatchPublisher`` (one per event loop) takes the
frames every sink of the loop has ready and writes them as one pipeline per shard
(``transaction=False``: plain ``PUBLISH`` commands, one write, one read of the replies).
While a batch is in flight the next one gathers, so the batch size follows the load.

Order: frames of one group are published in the order they were handed over (one batch
at a time, in order within a batch). Delivery stays at-most-once, as with ``group_send``:
a failed batch is logged and its frames are lost (consumers see the ``seq`` gap and tell
their clients to reload).

Other layers (in-memory, the core Redis layer) have no pipeline: their frames go through
``group_send`` one by one, in order.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

logger = logging.getLogger(__name__)


class BatchPublisher:
    def __init__(self, layer: Any) -> None:
        self._layer = layer
        self._batch: list[tuple[str, dict[str, Any], asyncio.Future[None]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.batches = 0
        self.frames = 0

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
        pipelines = self._pipelines(batch)
        if pipelines is None:
            for group, message, _ in batch:
                await self._layer.group_send(group, message)
            return
        await asyncio.gather(*(pipe.execute() for pipe in pipelines))

    def _pipelines(self, batch: list[tuple[str, dict[str, Any], asyncio.Future[None]]]) -> Any:
        """One pipeline per Redis shard, or ``None`` when the layer is not channels_redis'
        Pub/Sub layer (its per-loop layer, shards and serializer are what ``group_send``
        itself uses, so names, hashing and encoding stay exactly those of the layer)."""
        loop_layer = pubsub_loop_layer(self._layer)
        if loop_layer is None:
            return None
        pipelines: dict[int, Any] = {}
        for group, message, _ in batch:
            channel = loop_layer._get_group_channel_name(group)
            shard = loop_layer._get_shard(channel)
            pipe = pipelines.get(id(shard))
            if pipe is None:
                shard._ensure_redis()
                pipe = pipelines[id(shard)] = shard._redis.pipeline(transaction=False)
            pipe.publish(channel, self._layer.serialize(message))
        return list(pipelines.values())


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
