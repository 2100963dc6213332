"""The Django store and the in-memory store behave alike (the engine's store protocol)."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.bridge.store import DjangoStore
from agents_app.services.definitions.saves import save_definitions
from runtime.core.messages import Clock, Message, new_id
from runtime.core.progress import SessionProgress
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.store.memory import MemoryStore
from runtime.store.protocol import (
    Commit,
    LogRecord,
    MessageQuery,
    NewThread,
    QueuedMessage,
    ThreadUpdate,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

MODEL = ModelDefinition(name="m", provider="test", model="scripted")
PROMPT = PromptDefinition(name="p", model="m", prompt="hi", env={"FROM_PROMPT": "prompt-value"})
AGENT = AgentDefinition(
    name="a", side_a=SideConfig(prompt="p"), tenvs={"FROM_AGENT": "agent-value"}
)


@pytest.fixture(params=["memory", "django", "django-async-commits"])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return MemoryStore().add(MODEL, PROMPT, AGENT)
    save_definitions([("m", MODEL), ("p", PROMPT), ("a", AGENT)], strict_code_names=False)
    return DjangoStore(async_commits=request.param == "django-async-commits")


async def _thread(store: Any, **env: str) -> str:
    thread_id = new_id()
    await store.create_thread(NewThread(id=thread_id, agent_name="a", env=env))
    return thread_id


def _msg(clock: Clock, content: str, **kw: Any) -> Message:
    return Message(
        id=new_id(), role=kw.pop("role", "user"), content=content, created_at=clock.now(), **kw
    )


async def test_unknown_thread_is_a_lookup_error(store: Any) -> None:
    assert await store.get_thread(new_id()) is None
    with pytest.raises(LookupError):
        await store.list_messages(new_id(), MessageQuery())


async def test_thread_round_trips_with_origin_agent(store: Any) -> None:
    thread_id = await _thread(store)
    record = await store.get_thread(thread_id)
    assert (record.id, record.agent_name, record.origin_agent_name, record.stopped) == (
        thread_id,
        "a",
        "a",
        False,
    )


async def test_newest_page_is_returned_oldest_first(store: Any) -> None:
    thread_id, clock = await _thread(store), Clock()
    sent = [_msg(clock, f"m{i}") for i in range(5)]
    await store.commit(thread_id, Commit(messages=sent))
    page = await store.list_messages(thread_id, MessageQuery(limit=2))
    assert [m.content for m in page.messages] == ["m3", "m4"]
    assert (page.total, page.has_more) == (5, True)
    older = await store.list_messages(thread_id, MessageQuery(limit=2, offset=4, order="desc"))
    assert [m.content for m in older.messages] == ["m0"]
    assert older.has_more is False


async def test_silent_and_deep_messages_are_filtered(store: Any) -> None:
    thread_id, clock = await _thread(store), Clock()
    await store.commit(
        thread_id,
        Commit(
            messages=[
                _msg(clock, "visible"),
                _msg(clock, "quiet", silent=True),
                _msg(clock, "deep", depth=1),
            ]
        ),
    )
    default = await store.list_messages(thread_id, MessageQuery())
    everything = await store.list_messages(
        thread_id, MessageQuery(include_silent=True, max_depth=None)
    )
    assert [m.content for m in default.messages] == ["visible"]
    assert [m.content for m in everything.messages] == ["visible", "quiet", "deep"]


async def test_history_comes_with_the_newest_time_of_any_message(store: Any) -> None:
    thread_id, clock = await _thread(store), Clock()
    empty = await store.list_messages(thread_id, MessageQuery(limit=None, with_newest=True))
    assert (empty.messages, empty.newest_at) == ([], None)
    top, quiet = _msg(clock, "top"), _msg(clock, "quiet", silent=True)
    # Stored before the top-level row it will hang under, and the newest of all.
    deep = _msg(clock, "deep", depth=1)
    await store.commit(thread_id, Commit(messages=[top, quiet, deep]))
    query = MessageQuery(limit=None, include_silent=True, with_newest=True)
    page = await store.list_messages(thread_id, query)
    assert [m.content for m in page.messages] == ["top", "quiet"]
    assert page.newest_at == deep.created_at
    # Whatever the filters, and only when asked.
    filtered = await store.list_messages(thread_id, MessageQuery(with_newest=True))
    assert ([m.content for m in filtered.messages], filtered.newest_at) == (
        ["top"],
        deep.created_at,
    )
    assert (await store.list_messages(thread_id, MessageQuery(limit=None))).newest_at is None


async def test_newest_time_without_a_top_level_message(store: Any) -> None:
    thread_id, clock = await _thread(store), Clock()
    deep = _msg(clock, "deep", depth=1)
    await store.commit(thread_id, Commit(messages=[deep]))
    page = await store.list_messages(thread_id, MessageQuery(limit=None, with_newest=True))
    assert (page.messages, page.newest_at) == ([], deep.created_at)


async def test_commit_upserts_message_fields_and_reports_stop_flag(store: Any) -> None:
    thread_id, clock = await _thread(store), Clock()
    pending = _msg(clock, None, role="assistant", status="pending", side="a")
    await store.commit(thread_id, Commit(messages=[pending]))
    done = pending.copy(content="answer", status="completed", tool_calls=None, metadata={"k": 1})
    result = await store.commit(
        thread_id, Commit(messages=[done], thread=ThreadUpdate(stopped=True))
    )
    stored = await store.get_message(thread_id, pending.id)
    assert (stored.content, stored.status, stored.metadata, stored.side) == (
        "answer",
        "completed",
        {"k": 1},
        "a",
    )
    assert result.stopped is True


async def test_drain_moves_queue_after_existing_messages_in_order(store: Any) -> None:
    thread_id, clock = await _thread(store), Clock()
    await store.commit(thread_id, Commit(messages=[_msg(clock, "first")]))
    for text in ("q1", "q2"):
        await store.queue_message(thread_id, QueuedMessage(id=new_id(), content=text, created_at=1))
    result = await store.commit(thread_id, Commit(drain_queue=True))
    assert [m.content for m in result.drained] == ["q1", "q2"]
    page = await store.list_messages(thread_id, MessageQuery())
    assert [m.content for m in page.messages] == ["first", "q1", "q2"]
    assert (await store.commit(thread_id, Commit(drain_queue=True))).drained == []


async def test_progress_and_llm_response_count(store: Any) -> None:
    thread_id = await _thread(store)
    progress = SessionProgress(session_id=new_id(), agent="a", steps=3)
    logs = [
        LogRecord(id=new_id(), thread_id=thread_id, model="m", is_complete=True, created_at=10),
        LogRecord(
            id=new_id(),
            thread_id=thread_id,
            model="m",
            is_complete=True,
            error_type="interrupted",
            created_at=11,
        ),
        LogRecord(id=new_id(), thread_id=thread_id, model="m", is_complete=False, created_at=12),
    ]
    await store.commit(thread_id, Commit(logs=logs, progress=progress))
    assert (await store.load_progress(thread_id)).steps == 3
    assert await store.count_llm_responses(thread_id, "m") == 1


async def test_env_resolution_order_thread_agent_prompt(store: Any) -> None:
    thread_id = await _thread(store, FROM_AGENT="thread-wins")
    assert (await store.resolve_env(thread_id, "FROM_AGENT")).source == "thread"
    prompt_hit = await store.resolve_env(thread_id, "FROM_PROMPT", "p")
    assert (prompt_hit.value, prompt_hit.type, prompt_hit.source) == (
        "prompt-value",
        "secret",
        "prompt",
    )
    assert await store.resolve_env(thread_id, "NOPE") is None


async def test_set_env_keeps_type_or_defaults_to_secret(store: Any) -> None:
    thread_id = await _thread(store)
    await store.set_env(thread_id, "K", "v1")
    assert (await store.resolve_env(thread_id, "K")).type == "secret"
    await store.set_env(thread_id, "K", "v2", "text")
    await store.set_env(thread_id, "K", "v3")
    entry = await store.resolve_env(thread_id, "K")
    assert (entry.value, entry.type) == ("v3", "text")


async def test_values_are_json_preserving_and_none_deletes(store: Any) -> None:
    thread_id = await _thread(store)
    await store.set_value(thread_id, "cfg", {"a": [1, 2.5, None, True], "b": "x"})
    assert await store.get_value(thread_id, "cfg") == {"a": [1, 2.5, None, True], "b": "x"}
    await store.set_value(thread_id, "cfg", None)
    assert await store.get_value(thread_id, "cfg") is None
    assert await store.list_values(thread_id) == {}


async def test_files_write_read_list_delete(store: Any) -> None:
    thread_id = await _thread(store)
    await store.write_file(thread_id, "/docs/a.txt", b"hello", "text/plain")
    assert await store.read_file(thread_id, "/docs/a.txt") == b"hello"
    assert [f.path for f in await store.list_dir(thread_id, "/")] == ["/docs"]
    assert (await store.stat_file(thread_id, "/docs")).is_directory
    with pytest.raises(OSError):
        await store.delete_file(thread_id, "/docs")
    assert await store.delete_file(thread_id, "/docs/a.txt") is True
    assert await store.read_file(thread_id, "/docs/a.txt") is None


async def test_definitions_and_names(store: Any) -> None:
    assert (await store.get_agent("a")).side_a.prompt == "p"
    assert (await store.get_model("m")).provider == "test"
    assert await store.get_prompt("missing") is None
    assert await store.definition_names("agent") == ["a"]


async def test_provider_tool_results_and_citations_round_trip(store: Any) -> None:
    """What the vendor ran and the answer's sources live in the assistant message's metadata
    (shown at the top level of its wire form) and the log's response body, on both stores."""
    from runtime.core.messages import to_wire
    from runtime.store.protocol import LogQuery

    thread_id, clock = await _thread(store), Clock()
    tool = {
        "id": "srvtoolu_1",
        "name": "web_search",
        "type": "web_search",
        "provider": "anthropic",
        "status": "completed",
        "result": {"input": {"query": "weather"}, "results": [{"url": "https://a.example"}]},
    }
    cite = {"url": "https://a.example", "title": "A", "start": 0, "end": 5, "cited_text": "x"}
    blocks = [{"type": "web_search_tool_result", "content": [{"encrypted_content": "E"}]}]
    metadata = {
        "provider_tools": [tool],
        "citations": [cite],
        "provider_data": {"anthropic": {"blocks": blocks}},
    }
    answer = _msg(clock, "Sunny", role="assistant", status="completed", metadata=metadata)
    log = LogRecord(
        id=new_id(),
        thread_id=thread_id,
        model="m",
        is_complete=True,
        response_body={"content": "Sunny", "provider_tools": [tool], "citations": [cite]},
        created_at=10,
    )
    await store.commit(thread_id, Commit(messages=[answer], logs=[log]))

    [stored] = (await store.list_messages(thread_id, MessageQuery())).messages
    assert stored.metadata == metadata
    wire = to_wire(stored)
    assert wire["provider_tools"] == [tool] and wire["citations"] == [cite]
    [logged] = await store.list_logs(thread_id, LogQuery(limit=None))
    assert logged.response_body["provider_tools"] == [tool]
    assert logged.response_body["citations"] == [cite]
