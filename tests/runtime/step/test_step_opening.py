"""The opening of a step (pending message, incomplete log) is staged, not committed alone.

It rides with the response's commit when the model answers at once, and is
stored on its own, in the background, when the model streams or takes a while,
so listeners and readers still see the pending message before its chunks. A
background write that fails kills the session like any failed commit.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.engine import Engine, NewMessage
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import Commit, CommitResult, MessageQuery, Store, is_commit_failure
from runtime.store.recorder import STAGE_DELAY
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


class StoreFailed(Exception):
    """The database went away."""


class RecordingStore:
    """Delegates to a store and records each commit's message rows as (role, status)."""

    def __init__(self, inner: Store, fail_at: int | None = None) -> None:
        self.inner, self.fail_at = inner, fail_at
        self.commits: list[list[tuple[str, str]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def commit(self, thread_id: str, commit: Commit) -> CommitResult:
        self.commits.append([(m.role, m.status) for m in commit.messages])
        if len(self.commits) == self.fail_at:
            raise StoreFailed("connection lost")
        return await self.inner.commit(thread_id, commit)


@define_tool("Look it up")
async def lookup(state: Any) -> str:
    return "found"


def _engine(world: World, store: RecordingStore) -> Engine:
    return Engine(store, world.sink, registry=world.registry, providers=world.providers)  # type: ignore[arg-type]


async def _session(world: World, store: RecordingStore) -> str:
    engine = _engine(world, store)
    thread = await engine.create_thread("agent")
    await engine.run_session(thread.id, message=NewMessage("go"))
    return thread.id


def _statuses(world: World, thread_id: str, role: str = "assistant") -> list[list[str]]:
    """Per assistant message, the statuses its ``message_data`` frames showed, in order."""
    seen: dict[str, list[str]] = {}
    for frame in world.sink.frames[thread_id]:
        if frame["type"] == "message_data" and frame["data"]["role"] == role:
            seen.setdefault(frame["message_id"], []).append(frame["data"]["status"])
    return list(seen.values())


async def test_a_quick_reply_stores_the_steps_opening_with_its_response(world: World) -> None:
    world.register(lookup)
    world.define(prompt(tools=["lookup"]), agent())
    world.script("m", TestScript().add_tool_call("lookup").add_text("done"))
    store = RecordingStore(world.store)
    thread_id = await _session(world, store)
    assert store.commits[:3] == [
        [("user", "completed")],  # the session's start
        [("assistant", "completed")],  # the opening and the response: one row, one commit
        [("tool", "completed")],  # the result, closing the step
    ]
    # Listeners still saw the row pending first: its frame is sent with the completed one.
    assert _statuses(world, thread_id) == [["pending", "completed"]] * 2
    page = await world.store.list_messages(thread_id, MessageQuery(limit=None))
    assert [m.status for m in page.messages] == ["completed"] * 4


async def test_a_slow_model_has_its_pending_message_stored_while_it_thinks(world: World) -> None:
    world.define(prompt(), agent())
    thinking_ms = int(STAGE_DELAY * 1000) * 4
    world.script("m", TestScript().add_text("after a while", delay_ms=thinking_ms))
    store = RecordingStore(world.store)
    thread_id = await _session(world, store)
    assert store.commits[1] == [("assistant", "pending")]  # written before the reply existed
    assert store.commits[2][-1] == ("assistant", "completed")
    assert _statuses(world, thread_id) == [["pending", "completed"]]


async def test_a_streamed_reply_stores_its_pending_message_before_the_first_chunk(
    world: World,
) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_text("one two three").with_streaming(chunk_size=4))
    store = RecordingStore(world.store)
    thread_id = await _session(world, store)
    assert store.commits[1] == [("assistant", "pending")]
    kinds = [
        (f["type"], f["data"]["status"] if f["type"] == "message_data" else None)
        for f in world.sink.frames[thread_id]
        if f["type"] in ("message_data", "message_chunk") and f.get("depth") == 0
    ]
    reply = kinds[kinds.index(("message_data", "pending")) :]
    assert reply[1:-1] == [("message_chunk", None)] * 4
    assert reply[-1] == ("message_data", "completed")


async def test_a_failed_background_write_kills_the_session(world: World) -> None:
    world.define(prompt(), agent())
    thinking_ms = int(STAGE_DELAY * 1000) * 4
    world.script("m", TestScript().add_text("never stored", delay_ms=thinking_ms))
    store = RecordingStore(world.store, fail_at=2)  # the pending message's own write
    engine = _engine(world, store)
    thread = await engine.create_thread("agent")
    with pytest.raises(StoreFailed) as failed:
        await engine.run_session(thread.id, message=NewMessage("go"))
    assert is_commit_failure(failed.value)
    assert len(store.commits) == 2  # nothing was written after the failure
    page = await world.store.list_messages(thread.id, MessageQuery(limit=None))
    assert [(m.role, m.status) for m in page.messages] == [("user", "completed")]
