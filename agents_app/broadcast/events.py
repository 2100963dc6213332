"""``ChannelsSink``: the engine's live frames onto the channel layer, one group per thread.

Frames carry a per-thread sequence number (``seq``) so a client can detect a gap
(the layer drops group messages silently when over capacity) and catch up from
the database. Each frame is encoded once, here (``live_frames.live_event``); consumers
relay the text.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agents_app.broadcast import catch_up
from agents_app.broadcast.live_frames import encode, live_event
from agents_app.broadcast.publisher import BatchPublisher, publisher_for

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
        payload = live_event({**frame, "seq": next(self._seq[thread_id])})
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


def logs_group(thread_id: str) -> str:
    """Where ``log_data`` frames go (only the logs socket listens; message sockets never see them)."""
    return f"thread-{thread_id}-logs"


def group_of(thread_id: str, frame: dict[str, Any]) -> str:
    return logs_group(thread_id) if frame.get("type") == "log_data" else thread_group(thread_id)


class ChunkPacer:
    """How often one message's token chunks may be sent, given this process's load.

    Each process has a budget of chunk frames per second
    (``STUDIO_LIVE_CHUNK_FRAMES_PER_SECOND``); with ``n`` messages streaming, each may
    send one chunk frame every ``n / budget`` seconds (at most ``MAX_INTERVAL``). One
    stream alone is sent at once; two hundred are batched into a few frames per second
    each, so the layer, the consumers and the clients see a bounded frame rate.
    """

    MAX_INTERVAL = 0.25
    WINDOW = 1.0

    def __init__(self, budget: float | None = None) -> None:
        self.budget = budget
        self._active: dict[Any, float] = {}
        self._pruned = 0.0

    def touch(self, stream: Any, now: float) -> None:
        """``stream`` (any hashable: one message's chunks) sent a chunk at ``now``."""
        self._active[stream] = now
        if now - self._pruned > self.WINDOW:
            self._pruned = now
            stale = now - self.WINDOW
            for key in [k for k, t in self._active.items() if t < stale]:
                del self._active[key]

    def interval(self) -> float:
        budget = self.budget
        if budget is None:
            from django.conf import settings

            budget = float(getattr(settings, "STUDIO_LIVE_CHUNK_FRAMES_PER_SECOND", 4000))
        if budget <= 0 or len(self._active) <= 1:
            return 0.0
        return min(self.MAX_INTERVAL, len(self._active) / budget)


pacer = ChunkPacer()


def coalesce_window() -> float:
    """Seconds a thread's chunk frames wait to merge (``STUDIO_STREAM_COALESCE_MS``; 0: none)."""
    from django.conf import settings

    return max(0, int(getattr(settings, "STUDIO_STREAM_COALESCE_MS", 40))) / 1000


class LiveSink:
    """The engine's sink for sessions: ordered per group, token chunks coalesced under load.

    One sender task per group sends frames in order (concurrent ``group_send``
    calls could reorder them). Consecutive chunks of the same message merge into
    one frame while they wait: while a send is in flight, for the coalescing window
    after the group's last chunk frame (``STUDIO_STREAM_COALESCE_MS``: at most one
    chunk frame per window; the first chunk after a quiet window goes at once), and
    longer while the process's ``ChunkPacer`` says so (under load). Any other frame
    cuts the wait short, so message rows and telemetry are never delayed, and the
    merged chunks arrive before them: a client sees the same text in the same order,
    in fewer frames.
    Every frame gets ``seq`` (consecutive per group within this sink) and
    ``stream`` (this sink's id): a consumer that sees a gap in one stream knows
    frames were lost and tells its client to reload. ``log_data`` frames go to the
    thread's logs group, so message sockets are not sent what they would drop.
    """

    def __init__(
        self,
        layer: Any = None,
        stream: str | None = None,
        pacer: ChunkPacer | None = None,
        window: float | None = None,
        on_request: Callable[[], None] | None = None,
    ) -> None:
        """``on_request`` is called once, at the session's first ``llm_request`` frame."""
        self._on_request = on_request
        self._layer = layer or get_channel_layer()
        self.stream = stream or uuid.uuid4().hex[:12]
        self._pacer = pacer or globals()["pacer"]
        self._window = coalesce_window() if window is None else window
        self._queues: dict[str, collections.deque[dict[str, Any]]] = defaultdict(collections.deque)
        self._senders: dict[str, asyncio.Task[None]] = {}
        self._wake: dict[str, asyncio.Future[None]] = {}
        self._last_chunk: dict[str, float] = {}
        self._seq: dict[str, itertools.count[int]] = defaultdict(lambda: itertools.count(1))
        self._groups: dict[str, tuple[str, str]] = {}
        self._published_on: tuple[asyncio.AbstractEventLoop, BatchPublisher] | None = None
        self.sent = 0
        self.merged = 0
        # What streamed of each reply, kept for a stop (``sessions.stop_cleanup`` stores it
        # as the reply's text): the pieces, joined only when asked.
        self.opened: set[str] = set()
        self._texts: dict[str, list[str]] = defaultdict(list)
        # Per thread group, the replies recorded in its catch-up list (``catch_up``).
        self._tracked: dict[str, set[str]] = defaultdict(set)

    def text_of(self, message_id: str) -> str:
        """The text streamed so far of ``message_id`` (already redacted, as it was sent)."""
        return "".join(self._texts.get(message_id, ()))

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        # Once per token under load: lookups are kept few and keys plain (issue #21).
        kind = frame.get("type")
        if kind == "message_chunk":
            self._texts[frame["message_id"]].append(frame.get("chunk") or "")
        elif kind == "message_data" and frame.get("data", {}).get("status") == "pending":
            self.opened.add(str(frame.get("message_id")))
        if self._on_request is not None and kind == "llm_request":
            notify, self._on_request = self._on_request, None
            notify()
        if self._layer is None:
            return
        group = self._group(thread_id, kind)
        queue = self._queues[group]
        if kind in CHUNK_TYPES:
            message_id = frame.get("message_id")
            self._pacer.touch((group, message_id), time.monotonic())
            last = queue[-1] if queue else None
            if (
                last is not None
                and last.get("type") == kind
                and last.get("message_id") == message_id
            ):
                last["chunk"] = str(last.get("chunk", "")) + str(frame.get("chunk", ""))
                self.merged += 1
            else:
                queue.append(dict(frame))
        else:
            queue.append(dict(frame))
            self._release(group)
        if group not in self._senders:
            self._senders[group] = asyncio.get_running_loop().create_task(self._pump(group))

    def _group(self, thread_id: str, kind: Any) -> str:
        names = self._groups.get(thread_id)
        if names is None:
            names = self._groups[thread_id] = (thread_group(thread_id), logs_group(thread_id))
        return names[1] if kind == "log_data" else names[0]

    def _publisher(self) -> BatchPublisher:
        """The loop's publisher (``publisher_for``), looked up once per loop, not per frame."""
        loop = asyncio.get_running_loop()
        cached = self._published_on
        if cached is None or cached[0] is not loop:
            cached = self._published_on = (loop, publisher_for(self._layer))
        return cached[1]

    async def _pace(self, group: str, queue: collections.deque[dict[str, Any]]) -> None:
        """Hold a chunk at the head of the queue until its message may send again."""
        if len(queue) > 1 or queue[0].get("type") not in CHUNK_TYPES:
            return
        interval = max(self._window, self._pacer.interval())
        wait = self._last_chunk.get(group, 0.0) + interval - time.monotonic()
        if wait <= 0:
            return
        # One future and one timer per held chunk: ``asyncio.wait_for`` on an event (a task,
        # an event waiter and a timer) was a tenth of a busy worker's CPU (issue #21).
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._wake[group] = waiter
        timer = loop.call_later(wait, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            if self._wake.get(group) is waiter:
                del self._wake[group]

    def _release(self, group: str) -> None:
        """End the wait of ``group``'s held chunk now (another frame came, or a flush)."""
        waiter = self._wake.get(group)
        if waiter is not None:
            _resolve(waiter)

    async def _pump(self, group: str) -> None:
        queue = self._queues[group]
        try:
            while queue:
                await self._pace(group, queue)
                # Every frame ready goes to the publisher at once, in order, and the pump waits
                # for the last: a step's burst (a commit's rows, its log, its events) is one
                # batch, one Redis write and one round trip, not one per frame (issue #39).
                # Chunks arriving meanwhile still merge in the queue behind that wait.
                publisher = self._publisher()
                run: list[tuple[dict[str, Any], list[catch_up.Op] | None]] = []
                logs = group.endswith("-logs")
                while queue:
                    if run and len(queue) == 1 and queue[0].get("type") in CHUNK_TYPES:
                        break  # a lone trailing chunk waits for its pace: later tokens merge in
                    frame = queue.popleft()
                    if frame.get("type") in CHUNK_TYPES:
                        self._last_chunk[group] = time.monotonic()
                    frame["seq"], frame["stream"] = next(self._seq[group]), self.stream
                    # What a socket joining mid-reply is sent first (thread groups only).
                    ops = None if logs else catch_up.ops_for(frame, self._tracked[group]) or None
                    try:
                        run.append((live_event(frame), ops))
                    except Exception:  # a dropped live frame must never break a session
                        logger.warning("live frame to %s dropped", group, exc_info=True)
                if run:
                    self.sent += len(run)
                    # Batches complete in order: every earlier frame is out too.
                    await publisher.queue_run(group, run)
        finally:
            self._senders.pop(group, None)

    async def flush(self) -> None:
        """Wait until every queued frame has been handed to the layer."""
        for group in list(self._wake):
            self._release(group)
        while self._senders:
            await asyncio.gather(*list(self._senders.values()), return_exceptions=True)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


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
    publisher = publisher_for(layer)
    # Queued in order, written together (the publisher logs a failed batch; never raises).
    sent = []
    for frame in _stamp(thread_id, frames):
        try:
            message = live_event(frame)
        except Exception:  # a frame that cannot be encoded is dropped, never raised
            logger.warning("live frame to thread %s dropped", thread_id, exc_info=True)
            continue
        sent.append(publisher.queue(group_of(thread_id, frame), message))
    await asyncio.gather(*sent)


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
    # Encoded once for every socket of both groups; ``frame`` stays for readers of the layer.
    message = {"type": "registry.frame", "frame": frame, "text": encode(frame)}
    publisher = publisher_for(layer)  # logs a failed batch; never raises
    await asyncio.gather(*(publisher.queue(group, message) for group in groups))


def send_registry(frame: dict[str, Any], owner_id: Any) -> None:
    async_to_sync(asend_registry)(frame, owner_id)


async def _asend_thread_and_registry(
    thread_id: str, frames: list[dict[str, Any]], registry: dict[str, Any], owner_id: Any
) -> None:
    # Both queue before either waits: the thread's frames go first, in the same batch.
    await asyncio.gather(asend_thread_frames(thread_id, frames), asend_registry(registry, owner_id))


def send_thread_and_registry(
    thread_id: str, frames: list[dict[str, Any]], registry: dict[str, Any], owner_id: Any
) -> None:
    """``send_thread_frames`` and ``send_registry`` in one trip to the event loop (a post
    sends both on commit: one crossing and one Redis round trip instead of two each)."""
    async_to_sync(_asend_thread_and_registry)(thread_id, frames, registry, owner_id)
