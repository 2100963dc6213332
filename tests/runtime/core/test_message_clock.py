"""New messages sort after every stored one (``created_at`` is strictly increasing within a
thread, ``runtime.core.messages.Message``), deeper rows included: a sub-prompt's messages can be
stored before the top-level row they hang under, and another process's clock can run ahead."""

from __future__ import annotations

import time

from runtime.core.messages import Message, new_id
from runtime.store.protocol import Commit
from tests.runtime.conftest import World, agent, prompt

AHEAD_US = 60 * 1_000_000


async def _thread_with_a_deep_message_from_the_future(world: World, top_level: bool) -> tuple:
    world.define(agent(), prompt())
    world.script("m", [{"content": "ok"}, {"content": "again"}])
    thread = await world.thread()
    future = time.time_ns() // 1000 + AHEAD_US
    rows = []
    if top_level:
        rows.append(Message(id=new_id(), role="user", content="earlier", created_at=future - 10))
    rows.append(Message(id=new_id(), role="assistant", content="deep", created_at=future, depth=1))
    await world.store.commit(thread.id, Commit(messages=rows))
    return thread, future


async def test_new_messages_sort_after_a_deeper_stored_message(world: World) -> None:
    thread, future = await _thread_with_a_deep_message_from_the_future(world, top_level=True)
    await world.run(thread.id, "hello")
    new = [m for m in await world.messages(thread.id) if m.content not in ("earlier", "deep")]
    assert [m.content for m in new] == ["hello", "ok"]
    assert all(m.created_at > future for m in new), [(m.content, m.created_at) for m in new]


async def test_new_messages_sort_after_deep_rows_of_a_thread_without_top_level_ones(
    world: World,
) -> None:
    thread, future = await _thread_with_a_deep_message_from_the_future(world, top_level=False)
    await world.run(thread.id, "hello")
    new = [m for m in await world.messages(thread.id) if m.content != "deep"]
    assert [m.content for m in new] == ["hello", "ok"]
    assert all(m.created_at > future for m in new), [(m.content, m.created_at) for m in new]
