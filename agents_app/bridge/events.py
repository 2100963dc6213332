"""``ChannelsSink``: the engine's live frames onto the channel layer, one group per thread.

Frames carry a per-thread sequence number (``seq``) so a client can detect a gap
(the layer drops group messages silently when over capacity) and catch up from
the database.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import defaultdict
from typing import Any

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
