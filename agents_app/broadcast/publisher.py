"""Frames onto the channel layer in batches: one Redis round trip for many frames.

channels_redis' Pub/Sub layer sends each ``group_send`` as its own ``PUBLISH`` under a
per-shard lock, so a worker streaming hundreds of threads waits one round trip per
frame, one frame at a time: under load the queue of frames behind that lock, not the
CPU, was most of a token's latency. A ``BatchPublisher`` (one per event loop) takes the
frames every sink of the loop has ready and writes them to each shard as one write of plain
``PUBLISH`` commands, then reads their replies (``publish_all``). While a batch is in
flight the next one gathers, so the batch size follows the load. Within a batch, a group's
consecutive ``thread.frame`` messages travel as one ``thread.frames`` message
(``live_frames.frames_event``): a step's burst to one thread is one PUBLISH.

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
import math
import weakref
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from agents_app.broadcast import catch_up
from agents_app.broadcast.live_frames import THREAD_FRAME, frames_event

logger = logging.getLogger(__name__)


Queued = tuple[str, dict[str, Any], list[catch_up.Op] | None]


class BatchPublisher:
    def __init__(self, layer: Any) -> None:
        self._layer = layer
        self._batch: list[Queued] = []
        self._waiters: list[asyncio.Future[None]] = []  # one per handover, not per message
        self._runner: asyncio.Task[None] | None = None
        self.batches = 0
        self.frames = 0  # messages handed over
        self.messages = 0  # layer messages written (a group's frames together count once)

    def queue(
        self, group: str, message: dict[str, Any], before: list[catch_up.Op] | None = None
    ) -> asyncio.Future[None]:
        """Queue one layer message (in call order); the future ends once its batch was
        written or failed (failures are logged here, never raised). ``before``: the
        group's catch-up list ops (``catch_up``), written just before the message."""
        return self.queue_run(group, [(message, before)])

    def queue_run(
        self, group: str, items: list[tuple[dict[str, Any], list[catch_up.Op] | None]]
    ) -> asyncio.Future[None]:
        """``queue`` for a run of ``group``'s messages, in order, with one future for the run:
        a sink hands a step's burst at once and waits for its last frame only."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        batch = self._batch
        for message, before in items:
            batch.append((group, message, before))
        self._waiters.append(done)
        if self._runner is None:
            self._runner = loop.create_task(self._run())
        return done

    async def group_send(
        self, group: str, message: dict[str, Any], before: list[catch_up.Op] | None = None
    ) -> None:
        await self.queue(group, message, before)

    async def _run(self) -> None:
        try:
            while self._batch or self._waiters:
                batch, self._batch = self._batch, []
                waiters, self._waiters = self._waiters, []
                try:
                    await self._publish(batch)
                except Exception:  # a dropped live frame must never break a session
                    logger.warning("%d live frames dropped", len(batch), exc_info=True)
                self.batches += 1
                self.frames += len(batch)
                for done in waiters:
                    if not done.done():
                        done.set_result(None)
        finally:
            self._runner = None

    async def _publish(self, batch: list[Queued]) -> None:
        shards = self._shards(batch)
        if shards is None:
            local = catch_up.is_local(self._layer)
            for group, message, before in batch:
                if before and local:
                    catch_up.local_lists.apply(group, before)
                await self._layer.group_send(group, message)
            return
        if len(shards) == 1:
            await publish_all(*shards[0])
        else:
            await asyncio.gather(*(publish_all(*shard) for shard in shards))

    def _shards(self, batch: list[Queued]) -> list[tuple[Any, list[tuple[Any, ...]]]] | None:
        """Each Redis shard's client with its ``PUBLISH`` commands, or ``None`` when the
        layer is not channels_redis' Pub/Sub layer (its per-loop layer, shards and serializer
        are what ``group_send`` itself uses, so names, hashing and encoding stay exactly
        those of the layer)."""
        loop_layer = pubsub_loop_layer(self._layer)
        if loop_layer is None:
            return None
        shards: dict[int, tuple[Any, list[tuple[Any, ...]]]] = {}
        serialize = self._layer.serialize
        per_group: dict[str, list[tuple[dict[str, Any], list[catch_up.Op] | None]]] = {}
        for group, message, before in batch:
            per_group.setdefault(group, []).append((message, before))
        for group, items in per_group.items():
            channel = loop_layer._get_group_channel_name(group)
            shard = loop_layer._get_shard(channel)
            entry = shards.get(id(shard))
            if entry is None:
                shard._ensure_redis()
                entry = shards[id(shard)] = (shard._redis, [])
            commands = entry[1]
            # A group's run of thread frames is one PUBLISH (``thread.frames``): one message
            # for the layer to pack, and for each Daphne to receive and dispatch, not one per
            # frame. Each frame's catch-up entries are still written before the PUBLISH that
            # carries it (``catch_up``), and other messages keep their place between runs.
            run: list[dict[str, Any]] = []
            for message, before in items:
                if before:
                    commands.extend(catch_up.redis_commands(channel + catch_up.SUFFIX, before))
                if message.get("type") == THREAD_FRAME:
                    run.append(message)
                    continue
                if run:
                    commands.append(("PUBLISH", channel, serialize(frames_event(run))))
                    run = []
                commands.append(("PUBLISH", channel, serialize(message)))
            if run:
                commands.append(("PUBLISH", channel, serialize(frames_event(run))))
        self.messages += sum(
            1 for _, commands in shards.values() for c in commands if c[0] == "PUBLISH"
        )
        return list(shards.values())


async def publish_all(client: Any, commands: list[tuple[Any, ...]]) -> None:
    """Send ``commands`` to ``client``'s Redis in one write and read their replies.

    What a ``transaction=False`` pipeline does on the wire, without its per-command Python:
    redis-py's pipeline queued each command through the client's command machinery and read
    each reply under a timeout of its own (an ``asyncio.timeout`` per frame): about a tenth
    of a streaming worker's CPU per token at 200 sessions (issue #21). Here the replies
    share one timeout, the connection's ``socket_timeout``. A connection the server closed
    (a Redis restart) fails before any reply: the batch is sent once more on a new
    connection (the pipeline dropped it). Once a reply was read, a failure is not retried
    (the frames before it were delivered; the caller logs the batch as dropped).
    """
    pool = client.connection_pool
    for attempt in (1, 2):
        conn = await pool.get_connection()
        replies = 0
        try:
            await conn.send_packed_command(conn.pack_commands(commands))
            async with asyncio.timeout(conn.socket_timeout):
                for _ in commands:
                    await conn.read_response(timeout=math.inf)
                    replies += 1
            return
        except RedisConnectionError:
            await conn.disconnect(nowait=True)
            if attempt == 2 or replies:
                raise
        except BaseException:
            # Replies left unread would answer the connection's next command: drop it.
            await conn.disconnect(nowait=True)
            raise
        finally:
            await pool.release(conn)


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
