"""``ThreadState``: identity, messages, logs, definitions, values, env, files, events, execution."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import AgentDefinition
from runtime.providers.test_provider import TestScript
from runtime.state import EnvNotFound, normalize_path
from runtime.tools.registry import define_tool
from tests.runtime.conftest import Harness, World, agent, prompt, side


@pytest.fixture
async def state(world: World) -> Any:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_text("hello back"))
    thread = await world.thread(user_id="alice", tags=["vip"])
    await world.run(thread.id, "hello")
    return await world.engine.thread_state(thread.id)


async def test_identity_and_rest_state(state: Any, world: World) -> None:
    record = await world.store.get_thread(state.thread_id)
    assert record is not None
    assert (state.agent_id, state.user_id, state.parent_id) == ("agent", "alice", None)
    assert state.created_at == record.created_at and state.created_at > 10**15  # microseconds
    assert state.execution is None


async def test_get_messages_returns_the_newest_page_sorted(state: Any) -> None:
    for i in range(3):
        await state.inject_message("user", f"extra {i}")
    page = await state.get_messages(limit=2)
    assert [m.content for m in page.messages] == ["extra 1", "extra 2"]
    assert (page.total, page.has_more) == (5, True)
    oldest_page = await state.get_messages(limit=2, order="asc")
    assert [m.content for m in oldest_page.messages] == ["hello", "hello back"]
    oldest = await state.get_messages(limit=2, offset=3)
    assert [m.content for m in oldest.messages] == ["hello", "hello back"] and not oldest.has_more


async def test_silent_messages_are_hidden_unless_asked(state: Any) -> None:
    await state.inject_message("system", "note to self", silent=True)
    assert "note to self" not in [m.content for m in (await state.get_messages()).messages]
    with_silent = await state.get_messages(include_silent=True)
    assert with_silent.messages[-1].content == "note to self"


async def test_inject_and_update_message(state: Any, world: World) -> None:
    injected = await state.inject_message("assistant", "Injected", metadata={"source": "tool"})
    assert (await state.get_message(injected.id)).content == "Injected"
    updated = await state.update_message(injected.id, content="Edited", metadata={"edited": True})
    assert updated.content == "Edited" and updated.metadata == {"source": "tool", "edited": True}
    frames = [
        f
        for f in world.sink.of_type(state.thread_id, "message_data")
        if f["message_id"] == injected.id
    ]
    assert [f["data"]["content"] for f in frames] == ["Injected", "Edited"]


async def test_injected_message_joins_the_running_sessions_history(world: World) -> None:
    @define_tool("Add a note")
    async def note(state: Any) -> str:
        await state.inject_message("user", "(note from the tool)")
        return "noted"

    world.register(note)
    world.define(prompt(tools=["note"]), agent())
    world.script("m", TestScript().add_tool_call("note").add_text("ok"))
    await world.chat("x")
    assert {"role": "user", "content": "(note from the tool)"} in world.requests()[1].messages


async def test_get_logs_and_definitions(state: Any) -> None:
    logs = await state.get_logs()
    assert [(log.kind, log.model) for log in logs] == [("llm", "m")]
    assert (await state.load_agent("agent")).name == "agent"
    assert (await state.load_prompt("main")).model == "m"
    assert (await state.load_model("m")).provider == "test"
    with pytest.raises(LookupError):
        await state.load_prompt("nope")
    assert await state.get_prompt_names() == ["main"]
    assert await state.get_agent_names() == ["agent"]
    assert await state.get_model_names() == ["m"]


async def test_values_persist_and_none_deletes(state: Any, world: World) -> None:
    await state.set_value("count", {"n": 1, "items": [1, 2]})
    assert await state.get_value("count") == {"n": 1, "items": [1, 2]}
    await state.set_value("count", None)
    assert await state.get_value("count") is None
    changes = world.sink.events(state.thread_id, "kv_changed")
    assert [(c["data"]["key"], c["data"]["deleted"]) for c in changes] == [
        ("count", False),
        ("count", True),
    ]


async def test_emit_sends_an_event_frame(state: Any, world: World) -> None:
    state.emit("progress", {"pct": 50})
    frame = world.sink.frames[state.thread_id][-1]
    assert frame["type"] == "event" and frame["eventType"] == "progress"
    assert frame["data"] == {"pct": 50} and isinstance(frame["timestamp"], int)


async def test_env_resolution_order_thread_agent_prompt_user_instance(
    world: World, harness: Harness
) -> None:
    world.define(
        prompt(env={"NAME": "from-prompt", "PROMPT_ONLY": "p"}),
        AgentDefinition(
            name="agent", side_a=side("main"), tenvs={"NAME": "from-agent", "AGENT_ONLY": "a"}
        ),
    )
    world.script("m", TestScript())
    harness.set_user_env("alice", "NAME", "from-user")
    harness.set_user_env("alice", "USER_ONLY", "u", "text")
    harness.set_instance_env("NAME", "from-instance")
    harness.set_instance_env("INSTANCE_ONLY", "i", "text")
    thread = await world.thread(user_id="alice", env={"THREAD_ONLY": "t"})
    state = await world.engine.thread_state(thread.id)
    values = {
        k: await state.env(k)
        for k in ("NAME", "THREAD_ONLY", "AGENT_ONLY", "PROMPT_ONLY", "USER_ONLY", "INSTANCE_ONLY")
    }
    assert values == {
        "NAME": "from-agent",
        "THREAD_ONLY": "t",
        "AGENT_ONLY": "a",
        "PROMPT_ONLY": "p",
        "USER_ONLY": "u",
        "INSTANCE_ONLY": "i",
    }
    await state.set_env("NAME", "from-thread", type="text")
    assert await state.env("NAME") == "from-thread"
    assert [await state.env_type(k) for k in ("NAME", "AGENT_ONLY", "USER_ONLY", "MISSING")] == [
        "text",
        "secret",
        "text",
        "secret",
    ]
    with pytest.raises(EnvNotFound, match="Environment variable not found: MISSING"):
        await state.env("MISSING")


async def test_tool_written_mime_types_are_normalized_or_refused(state: Any) -> None:
    record = await state.write_file("/page.html", "<p>x</p>", " TEXT/HTML ")
    assert record.mime_type == "text/html"
    assert (await state.stat_file("/page.html")).mime_type == "text/html"
    with pytest.raises(ValueError, match="Invalid MIME type"):
        await state.write_file("/bad.bin", b"x", "text/html<script>")
    assert await state.stat_file("/bad.bin") is None


async def test_files(state: Any, world: World) -> None:
    record = await state.write_file("notes//todo.txt", "buy tea", "text/plain")
    assert (record.path, record.name, record.size) == ("/notes/todo.txt", "todo.txt", 7)
    assert await state.read_file("/notes/todo.txt") == b"buy tea"
    assert (await state.stat_file("/notes")).is_directory
    assert [e.path for e in await state.readdir("/notes")] == ["/notes/todo.txt"]
    await state.mkdir("/empty/dir")
    assert (await state.stat_file("/empty/dir")).is_directory
    assert await state.unlink("/notes/todo.txt") is True
    assert await state.read_file("/notes/todo.txt") is None
    assert [e["eventType"] for e in world.sink.of_type(state.thread_id, "event")][-2:] == [
        "file_created",
        "file_deleted",
    ]
    with pytest.raises(ValueError):
        normalize_path("/a/../../etc/passwd")  # above the root


async def test_execution_state_inside_a_tool(world: World) -> None:
    seen: dict[str, Any] = {}

    @define_tool("Inspect")
    async def inspect_state(state: Any) -> str:
        e = state.execution
        seen.update(
            flow=e.flow_id,
            side=e.current_side,
            steps=(e.step_count, e.side_a_step_count, e.side_b_step_count),
            stopped=e.stopped,
            history=[m.content for m in e.message_history],
            call=e.tool_call_id,
        )
        state.context["visits"] = state.context.get("visits", 0) + 1
        seen["visits"] = state.context["visits"]
        return "ok"

    world.register(inspect_state)
    world.define(prompt(tools=["inspect_state"]), agent())
    world.script(
        "m",
        TestScript()
        .add_tool_call("inspect_state", id="i1")
        .add_tool_call("inspect_state", id="i2")
        .add_text("done"),
    )
    _, result = await world.chat("look")
    assert seen["side"] == "a" and seen["steps"] == (2, 2, 0) and seen["stopped"] is False
    assert seen["flow"] == result.session_id and seen["call"] == "i2"
    assert seen["history"][0] == "look"
    assert seen["visits"] == 2  # context persists across tool calls within one session


async def test_force_turn_in_dual_ai_switches_sides(world: World) -> None:
    @define_tool("Let the other side speak")
    async def yield_turn(state: Any) -> str:
        state.execution.force_turn("b")
        return "yielded"

    world.register(yield_turn)
    world.define(
        prompt("pro", model="ma", tools=["yield_turn"]),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=1,
            side_a=side("pro"),
            side_b=side("con"),
        ),
    )
    world.script("ma", TestScript().add_tool_call("yield_turn"))
    world.script("mb", TestScript().add_text("B speaks"))
    _, result = await world.chat("x")
    assert [t.side for t in result.turn_outcomes] == ["b"]


SECRET = "kv-canary-9Xr4-secret"


async def test_spec_get_value_values_are_returned_exactly_as_they_were_stored(
    world: World,
) -> None:
    """Spec 0.15 ``getValue``: "Values are returned exactly as they were stored; runtimes MUST
    preserve JSON-equivalent structure", a value holding a secret included: in the execution
    that stored it and in a later one. What is shown stays redacted: the tool result the model
    receives, and the value as the store lists it for display."""
    stored = {"token": SECRET, "n": [1, 2.5, None, True], "note": f"key {SECRET}"}

    @define_tool("Remember the token")
    async def remember(state: Any) -> str:
        await state.set_value("cache", stored)
        same = await state.get_value("cache") == stored
        return f"same execution: {'exact' if same else 'changed'}; {SECRET}"

    @define_tool("Recall the token")
    async def recall(state: Any) -> str:
        later = await state.get_value("cache") == stored
        listed = (await state.list_values("ca"))["cache"] == stored
        return f"later execution: {'exact' if later and listed else 'changed'}"

    world.harness.set_instance_env("KV_TOKEN", SECRET)
    world.register(remember, recall)
    world.define(prompt(tools=["remember", "recall"]), agent())
    script = TestScript().add_tool_call("remember").add_text("kept")
    world.script("m", script.add_tool_call("recall").add_text("recalled"))
    thread, _ = await world.chat("keep it")
    await world.run(thread.id, "recall it")

    results = [m["content"] for r in world.requests() for m in r.messages if m["role"] == "tool"]
    assert "same execution: exact; [REDACTED]" in results
    assert "later execution: exact" in results
    assert not any(SECRET in str(r.messages) for r in world.requests())
