"""``ChannelsSink``: the engine's live frames onto the channel layer, one group per thread.

Frames carry a per-thread sequence number (``seq``) so a client can detect a gap
(the layer drops group messages silently when over capacity) and catch up from
the database.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import threading
import uuid
from collections import defaultdict
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def thread_group(thread_id: str) -> str:
    return f"thread-{thread_id}"


class ChannelsSink:
    """Schedules ``group_send`` on the running loop; never blocks the engine, never raises."""

    def __init__(self, layer: Any = None) -> None:
        self._layer = layer or get_channel_layer()
        self._seq: dict[str, itertools.count[int]] = defaultdict(lambda: itertools.count(1))
        self._pending: set[asyncio.Task[None]] = set()

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        if self._layer is None:
            return
        payload = {"type": "thread.frame", "frame": {**frame, "seq": next(self._seq[thread_id])}}
        task = asyncio.get_running_loop().create_task(self._send(thread_group(thread_id), payload))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _send(self, group: str, payload: dict[str, Any]) -> None:
        try:
            await self._layer.group_send(group, payload)
        except Exception:  # a dropped live frame must never break a session
            logger.warning("live frame to %s dropped", group, exc_info=True)

    async def flush(self) -> None:
        """Wait for scheduled sends (end of a session, tests, the bench)."""
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)


# --- ordered, coalescing delivery (sessions) and one-off broadcasts (services) ----------

CHUNK_TYPES = frozenset({"message_chunk", "reasoning_chunk"})
REGISTRY_ALL = "registry-all"


def registry_user_group(user_id: Any) -> str:
    return f"registry-user-{user_id}"


class LiveSink:
    """The engine's sink for sessions: ordered per thread, coalescing token chunks under load.

    One sender task per thread sends frames in order (concurrent ``group_send``
    calls could reorder them). While a send is in flight, consecutive chunks of
    the same message are merged into one frame, so an idle layer adds no delay
    and a busy one sends fewer, larger frames instead of falling behind. Every
    frame gets ``seq`` (consecutive per thread within this sink) and ``stream``
    (this sink's id): a consumer that sees a gap in one stream knows the layer
    dropped frames and tells its client to reload.
    """

    def __init__(self, layer: Any = None, stream: str | None = None) -> None:
        self._layer = layer or get_channel_layer()
        self.stream = stream or uuid.uuid4().hex[:12]
        self._queues: dict[str, collections.deque[dict[str, Any]]] = defaultdict(collections.deque)
        self._senders: dict[str, asyncio.Task[None]] = {}
        self._seq: dict[str, itertools.count[int]] = defaultdict(lambda: itertools.count(1))
        self.sent = 0
        self.merged = 0

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        if self._layer is None:
            return
        queue = self._queues[thread_id]
        last = queue[-1] if queue else None
        if (
            last is not None
            and frame.get("type") in CHUNK_TYPES
            and last.get("type") == frame.get("type")
            and last.get("message_id") == frame.get("message_id")
        ):
            last["chunk"] = str(last.get("chunk", "")) + str(frame.get("chunk", ""))
            self.merged += 1
        else:
            queue.append(dict(frame))
        if thread_id not in self._senders:
            task = asyncio.get_running_loop().create_task(self._pump(thread_id))
            self._senders[thread_id] = task

    async def _pump(self, thread_id: str) -> None:
        queue, group = self._queues[thread_id], thread_group(thread_id)
        try:
            while queue:
                frame = queue.popleft()
                frame["seq"], frame["stream"] = next(self._seq[thread_id]), self.stream
                try:
                    await self._layer.group_send(group, {"type": "thread.frame", "frame": frame})
                    self.sent += 1
                except Exception:  # a dropped live frame must never break a session
                    logger.warning("live frame to %s dropped", group, exc_info=True)
        finally:
            self._senders.pop(thread_id, None)

    async def flush(self) -> None:
        """Wait until every queued frame has been handed to the layer."""
        while self._senders:
            await asyncio.gather(*list(self._senders.values()), return_exceptions=True)


_api_stream = uuid.uuid4().hex[:12]
_api_seq: dict[str, itertools.count[int]] = defaultdict(lambda: itertools.count(1))
_api_lock = threading.Lock()


def _stamp(thread_id: str, frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with _api_lock:
        counter = _api_seq[thread_id]
        return [{**f, "seq": next(counter), "stream": _api_stream} for f in frames]


async def asend_thread_frames(thread_id: str, frames: list[dict[str, Any]]) -> None:
    """Send frames to a thread's listeners from async code (never raises)."""
    layer = get_channel_layer()
    if layer is None:
        return
    for frame in _stamp(thread_id, frames):
        try:
            await layer.group_send(
                thread_group(thread_id), {"type": "thread.frame", "frame": frame}
            )
        except Exception:
            logger.warning("live frame to thread %s dropped", thread_id, exc_info=True)


def send_thread_frames(thread_id: str, frames: list[dict[str, Any]]) -> None:
    """Send frames to a thread's listeners from sync code (services call it on commit)."""
    if frames:
        async_to_sync(asend_thread_frames)(thread_id, frames)


async def asend_registry(frame: dict[str, Any], owner_id: Any) -> None:
    """A registry frame to the owner's ``scope=user`` sockets and to staff ``scope=all`` sockets."""
    layer = get_channel_layer()
    if layer is None:
        return
    groups = [REGISTRY_ALL] + ([registry_user_group(owner_id)] if owner_id else [])
    for group in groups:
        try:
            await layer.group_send(group, {"type": "registry.frame", "frame": frame})
        except Exception:
            logger.warning("registry frame to %s dropped", group, exc_info=True)


def send_registry(frame: dict[str, Any], owner_id: Any) -> None:
    async_to_sync(asend_registry)(frame, owner_id)
