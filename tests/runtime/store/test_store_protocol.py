"""The store protocol's contract, through the ``store`` fixture (any implementation must pass)."""

from __future__ import annotations

import pytest

from runtime.core.messages import Clock, Message, new_id
from runtime.core.progress import SessionProgress, ThreadExecutionState
from runtime.store.protocol import (
    Commit,
    LogQuery,
    LogRecord,
    MessageQuery,
    NewThread,
    QueuedMessage,
    Store,
    ThreadUpdate,
)
from tests.runtime.conftest import Harness, agent, prompt


@pytest.fixture
async def thread_id(store: Store, harness: Harness) -> str:
    harness.define(prompt(), agent())
    new = NewThread(id=new_id(), agent_name="agent", user_id="u1", tags=["a"], env={"K": "v"})
    await store.create_thread(new)
    return new.id


def _message(clock: Clock, content: str, **fields: object) -> Message:
    return Message(id=new_id(), role="user", content=content, created_at=clock.now(), **fields)  # type: ignore[arg-type]


async def test_store_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


async def test_thread_round_trip(store: Store, thread_id: str) -> None:
    record = await store.get_thread(thread_id)
    assert record is not None
    assert (record.agent_name, record.origin_agent_name, record.user_id, record.tags) == (
        "agent",
        "agent",
        "u1",
        ["a"],
    )
    assert record.stopped is False and record.execution_state == ThreadExecutionState()
    assert await store.get_thread(new_id()) is None
    with pytest.raises(LookupError):
        await store.list_messages(new_id(), MessageQuery())


async def test_commit_upserts_messages_and_logs(store: Store, thread_id: str) -> None:
    clock = Clock()
    message = _message(clock, "hi", status="pending")
    log = LogRecord(id=new_id(), thread_id=thread_id, model="m", created_at=clock.now())
    await store.commit(thread_id, Commit(messages=[message], logs=[log]))
    done = message.copy(status="completed", content="hello")
    completed = LogRecord(**_log_fields(log, is_complete=True))  # type: ignore[arg-type]
    await store.commit(thread_id, Commit(messages=[done], logs=[completed]))
    stored = await store.get_message(thread_id, message.id)
    assert stored is not None and (stored.status, stored.content) == ("completed", "hello")
    logs = await store.list_logs(thread_id, LogQuery())
    assert len(logs) == 1 and logs[0].is_complete


def _log_fields(log: LogRecord, **changes: object) -> dict[str, object]:
    from dataclasses import asdict

    return {**asdict(log), **changes}


async def test_paging_returns_the_newest_window(store: Store, thread_id: str) -> None:
    clock = Clock()
    rows = [_message(clock, f"m{i}") for i in range(5)]
    await store.commit(thread_id, Commit(messages=rows))
    page = await store.list_messages(thread_id, MessageQuery(limit=2))
    assert [m.content for m in page.messages] == ["m3", "m4"] and (page.total, page.has_more) == (
        5,
        True,
    )
    desc = await store.list_messages(thread_id, MessageQuery(limit=2, offset=1, order="desc"))
    assert [m.content for m in desc.messages] == ["m2", "m3"]
    asc = await store.list_messages(thread_id, MessageQuery(limit=2, offset=1, order="asc"))
    assert [m.content for m in asc.messages] == ["m1", "m2"] and asc.has_more
    everything = await store.list_messages(thread_id, MessageQuery(limit=None))
    assert len(everything.messages) == 5 and not everything.has_more


async def test_depth_silent_and_parent_filters(store: Store, thread_id: str) -> None:
    clock = Clock()
    top = _message(clock, "top")
    silent = _message(clock, "quiet", silent=True)
    child = _message(clock, "child", depth=1, parent_id=top.id)
    await store.commit(thread_id, Commit(messages=[top, silent, child]))
    default = await store.list_messages(thread_id, MessageQuery())
    assert [m.content for m in default.messages] == ["top"]
    deep = await store.list_messages(thread_id, MessageQuery(max_depth=None, include_silent=True))
    assert [m.content for m in deep.messages] == ["top", "quiet", "child"]
    children = await store.list_messages(thread_id, MessageQuery(max_depth=None, parent_id=top.id))
    assert [m.content for m in children.messages] == ["child"]


async def test_commit_drains_the_queue_after_everything_else(store: Store, thread_id: str) -> None:
    clock = Clock()
    await store.queue_message(thread_id, QueuedMessage(id=new_id(), content="queued 1"))
    await store.queue_message(
        thread_id, QueuedMessage(id=new_id(), role="assistant", content="queued 2")
    )
    written = _message(clock, "written")
    result = await store.commit(thread_id, Commit(messages=[written], drain_queue=True))
    assert [(m.content, m.role, m.side) for m in result.drained] == [
        ("queued 1", "user", "b"),
        ("queued 2", "assistant", "a"),
    ]
    assert written.created_at < result.drained[0].created_at < result.drained[1].created_at
    again = await store.commit(thread_id, Commit(drain_queue=True))
    assert again.drained == []


async def test_commit_without_drain_leaves_the_queue(store: Store, thread_id: str) -> None:
    await store.queue_message(thread_id, QueuedMessage(id=new_id(), content="waits"))
    assert (await store.commit(thread_id, Commit())).drained == []
    assert len((await store.commit(thread_id, Commit(drain_queue=True))).drained) == 1


async def test_commit_reports_the_stop_flag_and_updates_the_thread(
    store: Store, thread_id: str, harness: Harness
) -> None:
    harness.define(prompt("p2"), agent("other", "p2"))  # a handoff target must exist
    assert (await store.commit(thread_id, Commit())).stopped is False
    harness.press_stop(thread_id)
    assert (await store.commit(thread_id, Commit())).stopped is True
    state = ThreadExecutionState(turns={"a": 2, "b": 1}, last_stop_reason="stop_on_response")
    result = await store.commit(
        thread_id,
        Commit(thread=ThreadUpdate(stopped=False, agent_name="other", execution_state=state)),
    )
    record = await store.get_thread(thread_id)
    assert result.stopped is False and record is not None
    assert (record.agent_name, record.origin_agent_name, record.execution_state) == (
        "other",
        "agent",
        state,
    )


async def test_progress_round_trip(store: Store, thread_id: str) -> None:
    assert await store.load_progress(thread_id) is None
    progress = SessionProgress(
        session_id=new_id(), agent="agent", steps=3, side_steps={"a": 3, "b": 0}
    )
    await store.commit(thread_id, Commit(progress=progress))
    assert await store.load_progress(thread_id) == progress


async def test_what_is_committed_or_read_shares_nothing_the_engine_can_change(
    store: Store, thread_id: str
) -> None:
    """A store keeps its own copy, as a database row is: changing a message or a progress
    after committing it, or changing what a read returned, changes nothing stored."""
    clock = Clock()
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = Message(
        id=new_id(),
        role="assistant",
        content="hi",
        created_at=clock.now(),
        tool_calls=[call],  # type: ignore[list-item]
        metadata={"nested": {"k": [1]}},
        attachments=[{"name": "a.txt"}],
        reasoning_details=[{"text": "why"}],
    )
    progress = SessionProgress(session_id=new_id(), agent="agent", outcome={"k": [1]})
    await store.commit(thread_id, Commit(messages=[message], progress=progress))
    message.tool_calls[0]["function"]["name"] = "changed"  # type: ignore[index]
    message.metadata["nested"]["k"].append(2)
    message.attachments[0]["name"] = "changed"  # type: ignore[index]
    message.reasoning_details[0]["text"] = "changed"  # type: ignore[index]
    progress.side_steps["a"] = 9
    progress.outcome["k"].append(2)

    read = await store.get_message(thread_id, message.id)
    assert read is not None
    assert read.tool_calls == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]
    assert read.metadata == {"nested": {"k": [1]}}
    assert read.attachments == [{"name": "a.txt"}]
    assert read.reasoning_details == [{"text": "why"}]
    loaded = await store.load_progress(thread_id)
    assert loaded is not None and loaded.side_steps == {"a": 0, "b": 0}
    assert loaded.outcome == {"k": [1]}

    read.metadata["nested"]["k"].append(3)
    read.tool_calls[0]["function"]["arguments"] = "changed"  # type: ignore[index]
    loaded.outcome["k"].append(3)
    again = await store.get_message(thread_id, message.id)
    assert again is not None and again.metadata == {"nested": {"k": [1]}}
    assert again.tool_calls[0]["function"]["arguments"] == "{}"  # type: ignore[index]
    reloaded = await store.load_progress(thread_id)
    assert reloaded is not None and reloaded.outcome == {"k": [1]}


async def test_count_llm_responses_ignores_incomplete_and_interrupted(
    store: Store, thread_id: str
) -> None:
    def log(**fields: object) -> LogRecord:
        return LogRecord(id=new_id(), thread_id=thread_id, model="m", **fields)  # type: ignore[arg-type]

    logs = [
        log(is_complete=True),
        log(is_complete=True, error="boom", error_type="server_error"),
        log(is_complete=False),
        log(is_complete=True, error_type="interrupted"),
        log(is_complete=True, kind="tool"),
        LogRecord(id=new_id(), thread_id=thread_id, model="other", is_complete=True),
    ]
    await store.commit(thread_id, Commit(logs=logs))
    assert await store.count_llm_responses(thread_id, "m") == 2


async def test_values(store: Store, thread_id: str) -> None:
    await store.set_value(thread_id, "a.one", {"x": [1]})
    await store.set_value(thread_id, "b", 2)
    assert await store.get_value(thread_id, "a.one") == {"x": [1]}
    assert await store.list_values(thread_id, "a.") == {"a.one": {"x": [1]}}
    await store.set_value(thread_id, "b", None)
    assert await store.get_value(thread_id, "b") is None


async def test_env_and_types(store: Store, thread_id: str) -> None:
    entry = await store.resolve_env(thread_id, "K")
    assert entry is not None and (entry.value, entry.type, entry.source) == (
        "v",
        "secret",
        "thread",
    )
    await store.set_env(thread_id, "K", "w", "text")
    await store.set_env(thread_id, "K", "x")
    entry = await store.resolve_env(thread_id, "K")
    assert entry is not None and (entry.value, entry.type) == ("x", "text")
    assert await store.resolve_env(thread_id, "NOPE") is None


async def test_files(store: Store, thread_id: str) -> None:
    record = await store.write_file(
        thread_id, "/docs/a.txt", b"abc", "text/plain", metadata={"k": 1}
    )
    assert (record.name, record.size, record.metadata) == ("a.txt", 3, {"k": 1})
    assert await store.read_file(thread_id, "/docs/a.txt") == b"abc"
    assert (await store.stat_file(thread_id, "/docs")).is_directory  # type: ignore[union-attr]
    assert [e.path for e in await store.list_dir(thread_id, "/")] == ["/docs"]
    with pytest.raises(OSError):
        await store.delete_file(thread_id, "/docs")
    assert await store.delete_file(thread_id, "/docs/a.txt") is True
    assert await store.delete_file(thread_id, "/docs/a.txt") is False
    assert (await store.make_dir(thread_id, "/x/y")).is_directory


async def test_definitions(store: Store, harness: Harness) -> None:
    harness.define(prompt("p2"), agent("a2", "p2"))
    assert (await store.get_agent("a2")).side_a.prompt == "p2"  # type: ignore[union-attr]
    assert (await store.get_prompt("p2")).name == "p2"  # type: ignore[union-attr]
    assert await store.get_model("nope") is None
    assert "a2" in await store.definition_names("agent")
