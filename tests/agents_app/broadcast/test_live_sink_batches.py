"""A step's burst of live frames leaves as one batch (issue #39): the frames a commit emits
together (its rows, its log, its events) are handed to the publisher at once and written in
one Redis write, not one round trip each; on a real Redis through channels_redis' layer,
in order, every frame delivered. Counts, not times."""

from __future__ import annotations

import os
import uuid
from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer

from agents_app.broadcast.events import ChunkPacer, LiveSink, thread_group
from agents_app.broadcast.publisher import publisher_for

REDIS = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _row(n: int) -> dict[str, Any]:
    data = {"id": f"m{n}", "role": "tool", "status": "completed", "content": f"result {n}"}
    return {"type": "message_data", "message_id": f"m{n}", "depth": 0, "data": data}


async def test_a_commits_frames_leave_in_one_batch_in_order() -> None:
    layer = RedisPubSubChannelLayer(hosts=[REDIS], prefix=f"burst-{uuid.uuid4().hex[:8]}")
    thread_id = str(uuid.uuid4())
    channel = await layer.new_channel()
    await layer.group_add(thread_group(thread_id), channel)
    sink = LiveSink(layer=layer, pacer=ChunkPacer(budget=0), window=0)
    for n in range(6):  # what one commit emits, all at once
        sink.emit(thread_id, _row(n))
    await sink.flush()
    publisher = publisher_for(layer)
    assert (publisher.frames, publisher.batches) == (6, 1)
    received = [await layer.receive(channel) for _ in range(6)]
    assert [m["meta"]["seq"] for m in received] == [1, 2, 3, 4, 5, 6]
    await layer.flush()
