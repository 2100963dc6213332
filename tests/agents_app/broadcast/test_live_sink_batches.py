"""A step's burst of live frames leaves as one batch (issue #39): the frames a commit emits
together (its rows, its log, its events) are handed to the publisher at once and written in
one Redis write, not one round trip each; on a real Redis through channels_redis' layer,
in order, every frame delivered, as one layer message for the thread's group. Counts, not
times."""

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
    # One layer message for the thread's six frames (one PUBLISH, one receive per Daphne).
    assert (publisher.frames, publisher.messages, publisher.batches) == (6, 1, 1)
    received = await layer.receive(channel)
    assert received["type"] == "thread.frames"
    assert [m["meta"]["seq"] for m in received["events"]] == [1, 2, 3, 4, 5, 6]
    await layer.flush()


class _Both:
    """The cost meter's sink and the live sink, as the session runner's fan-out."""

    def __init__(self, *sinks: Any) -> None:
        self.sinks = sinks

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        for sink in self.sinks:
            sink.emit(thread_id, frame)


async def test_a_step_of_the_tool_loop_sends_its_13_frames_in_at_most_half_as_many_messages() -> (
    None
):
    """The 20-step scripted tool loop (tests/runtime/test_step_cost.py) with the live sink on
    a real Redis: every frame is published, but a step's frames to one thread travel
    together (``thread.frames``), so Redis and each Daphne see a few messages per step, not
    one per frame (13 before: 12.9 PUBLISH per step in ``bench/django_engine_bench.py``,
    4.0 after). How many frames share a message depends on when a batch's write returns,
    so the bound is loose: at most half the frames' count."""
    from runtime.store.memory import MemoryStore
    from tests.runtime.conftest import Harness, World
    from tests.runtime.test_step_cost import STEPS, run_loop, tool_loop

    layer = RedisPubSubChannelLayer(hosts=[REDIS], prefix=f"loop-{uuid.uuid4().hex[:8]}")
    world = World(Harness(MemoryStore()))
    meter = tool_loop(world, STEPS, count_store=False)
    live = LiveSink(layer=layer, pacer=ChunkPacer(budget=0), window=0)
    world.sink = _Both(world.sink, live)  # type: ignore[assignment]
    await run_loop(world, meter, STEPS)
    await live.flush()
    publisher = publisher_for(layer)
    assert publisher.frames == live.sent
    assert publisher.frames >= 12 * STEPS, publisher.frames  # every step's frames went out
    assert publisher.messages * 2 <= publisher.frames, (publisher.messages, publisher.frames)
    await layer.flush()


# Python calls of the live path (the sink, the publisher, the embedded layer; 12.9 frames) per
# step of the tool loop, nobody watching the thread: measured for issue #58 at 157.1 per step,
# 131.6 since a sink hands a step's burst to the publisher with one future (not one per frame)
# and a group nobody watches skips the in-memory layer's clean-up pass (the engine bench's
# step, asyncio's futures and tasks included: 3,029 → 2,924 calls). 10% more fails.
LIVE_CALLS_PER_STEP = 131.6


async def test_a_step_s_frames_cost_the_embedded_live_path_a_bounded_number_of_calls() -> None:
    from agents_app.broadcast.memory_layer import EmbeddedChannelLayer
    from runtime.store.memory import MemoryStore
    from tests.agents_app.start_meter import CallCounter
    from tests.runtime.conftest import Harness, World
    from tests.runtime.test_step_cost import STEPS, run_loop, tool_loop

    world = World(Harness(MemoryStore()))
    meter = tool_loop(world, STEPS, count_store=False)
    live = LiveSink(layer=EmbeddedChannelLayer(), pacer=ChunkPacer(budget=0), window=0)
    world.sink = _Both(world.sink, live)  # type: ignore[assignment]
    with CallCounter() as counter:
        await run_loop(world, meter, STEPS)
        await live.flush()
    assert live.sent >= 12 * STEPS, live.sent
    path = ("agents_app.broadcast.", "channels.")
    calls = {name: n for name, n in counter.calls.items() if name.startswith(path)}
    per_step = sum(calls.values()) / STEPS
    assert per_step <= LIVE_CALLS_PER_STEP * 1.1, sorted(calls.items(), key=lambda i: -i[1])
