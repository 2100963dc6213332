"""Spec session tools (``SessionToolConfig``/``SessionToolBinding``), the ThreadState hierarchy
calls (``set_status``, ``stop_session`` options, ``get_parent_thread``, ``prompt_path``) and the
subagent relationship options ``scopedEnv``, ``parentCommunication`` and ``hidden``.

Runs over the in-memory store here and over ``DjangoStore`` in tests/agents_app/bridge/engine_on_django.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import AgentDefinition, SessionToolBinding, ToolConfig
from runtime.delegation.inline_host import InlineHost
from runtime.engine import Engine
from runtime.providers.test_provider import TestScript
from runtime.state import EnvNotFound, ThreadState
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt, side

STOP = SessionToolBinding(name="finish", message_property="summary", attachments_property="files")
FAIL = SessionToolBinding(name="give_up", message_property="reason")
STATUS = SessionToolBinding(name="report_status", message_property="status")


@pytest.fixture
def host(world: World) -> InlineHost:
    """The world's engine with an ``InlineHost``: background children run as tasks."""
    inline = InlineHost()
    world._engine = Engine(
        world.store,
        world.sink,
        registry=world.registry,
        providers=world.providers,
        sleep=world._sleep,
        subagent_host=inline,
    )
    inline.engine = world._engine
    return inline


def _family(
    world: World,
    entry: ToolConfig,
    child_script: TestScript,
    child_tools: list[Any] | None = None,
    **child_side: Any,
) -> None:
    """Agent ``agent`` (prompt ``main``, model ``m``) with subagent ``helper`` (model ``mc``)."""
    child_side.setdefault("session_stop", STOP)
    child_side.setdefault("session_fail", FAIL)
    child_side.setdefault("session_status", STATUS)
    world.define(
        prompt("main", tools=[entry]),
        agent("agent", "main"),
        prompt("helper_prompt", model="mc", text="You help.", tools=child_tools),
        AgentDefinition(name="helper", side_a=side("helper_prompt", **child_side)),
    )
    world.script("mc", child_script)


async def _silent(world: World, thread_id: str) -> list[Any]:
    return [m for m in await world.messages(thread_id) if m.silent]


# --- sessionStop / sessionFail / sessionStatus ----------------------------------------------


async def test_spec_session_stop_tool_ends_session_with_its_message_property(
    world: World,
) -> None:
    world.define(prompt("main"), agent("agent", "main", side_a=side("main", session_stop=STOP)))
    world.script(
        "m",
        TestScript()
        .add_tool_call("finish", {"summary": "All done."}, id="c1")
        .add_text("never asked"),
    )
    thread, result = await world.chat("go")
    assert result.stop_reason == "session_stop"
    assert result.answer == "All done."
    [row] = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert row.content == "All done." and row.tool_status == "success"
    # The built-in tool was offered with the mapped arguments.
    tools = {t.name: t for t in world.requests()[0].tools}
    assert tools["finish"].parameters["required"] == ["summary"]
    assert tools["finish"].parameters["properties"]["files"]["type"] == "array"


async def test_spec_session_tool_bare_string_is_the_tool_name() -> None:
    side_config = side("main", session_stop="finish")  # the 0.1.0 form
    assert side_config.session_stop == SessionToolBinding(name="finish")
    assert side_config.dump()["sessionStop"] == {"name": "finish"}


async def test_spec_session_fail_child_failure_is_received_by_the_parent_as_failure(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        ToolConfig(name="helper", blocking=False),
        TestScript().add_tool_call("give_up", {"reason": "No data for 1999."}),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("helper", {"message": "Find 1999"}, id="c1")
        .add_text("asked")
        .add_text("It failed."),
    )
    thread, _ = await world.chat("go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    [delivery] = await _silent(world, thread.id)
    assert delivery.content == (
        f"Subagent (reference: {child.id}) has reported a failure:\n\nNo data for 1999."
    )
    assert child.child_status == "failed"
    end = world.sink.events(thread.id, "subagent_end")[-1]["data"]
    assert end["success"] is False and end["error"] == "No data for 1999."


async def test_spec_session_stop_child_result_is_its_message_property(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        ToolConfig(name="helper", blocking=True),
        TestScript().add_text("thinking aloud").add_tool_call("finish", {"summary": "42 apples"}),
        stop_on_response=False,
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "Count"}).add_text("ok"))
    thread, _ = await world.chat("go")
    [row] = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert row.tool_status == "success"
    assert row.content == f"42 apples\n\nReference: {row.subagent_id}"


async def test_spec_session_fail_call_that_fails_stops_nothing(world: World) -> None:
    """A session tool whose every call failed ends nothing (reference §4.7 step 1)."""
    world.define(
        prompt("main"),
        agent("agent", "main", side_a=side("main", session_fail=STOP.model_copy())),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("finish", {"summary": "x", "files": ["/attachments/none.txt"]})
        .add_text("retrying in words"),
    )
    thread, result = await world.chat("go")
    assert result.stop_reason == "stop_on_response"
    [row] = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert row.tool_status == "error"
    assert "Provided attachment path(s) not found in this thread: /attachments/none.txt" in (
        row.content or ""
    )


async def test_spec_session_status_tool_sets_parent_registry_status_without_ending(
    world: World, host: InlineHost
) -> None:
    seen: list[str] = []

    async def peek(state: ThreadState) -> str:
        parent = await state.get_parent_thread()
        assert parent is not None
        [me] = await parent.children()
        seen.append(me.child_status)
        return "peeked"

    world.register(define_tool("Look at the parent's registry", peek, name="peek"))
    _family(
        world,
        ToolConfig(name="helper", blocking=False),
        TestScript()
        .add_tool_call("report_status", {"status": "Reading chapter 2"})
        .add_tool_call("peek", {})
        .add_text("all read"),
        child_tools=["peek"],
    )
    world.script(
        "m",
        TestScript().add_tool_call("helper", {"message": "Read"}).add_text("a").add_text("b"),
    )
    thread, _ = await world.chat("go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    # The status was the registry's while the child went on; its end settled it again.
    assert seen == ["Reading chapter 2"]
    assert child.child_status == "idle"
    rows = [m for m in await world.messages(child.id) if m.role == "tool"]
    assert rows[0].content == "Reading chapter 2" and rows[0].tool_status == "success"
    status = world.sink.events(thread.id, "subagent_status")
    assert [f["data"]["status"] for f in status] == ["Reading chapter 2"]
    assert status[0]["data"]["subagentId"] == child.id
    [delivery] = await _silent(world, thread.id)
    assert delivery.content.endswith("all read")


async def test_spec_session_stop_attachments_are_copied_to_the_parent_with_new_paths(
    world: World, host: InlineHost
) -> None:
    async def draw(state: ThreadState) -> str:
        await state.write_file("/attachments/chart.csv", b"a,b\n1,2\n", "text/csv")
        return "drawn"

    world.register(define_tool("Make a chart", draw, name="draw"))
    _family(
        world,
        ToolConfig(name="helper", blocking=True),
        TestScript()
        .add_tool_call("draw", {})
        .add_tool_call(
            "finish", {"summary": "Chart attached.", "files": ["/attachments/chart.csv"]}
        ),
        child_tools=["draw"],
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "Chart"}).add_text("ok"))
    thread, _ = await world.chat("go")
    [row] = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert row.attachments is not None and len(row.attachments) == 1
    path = row.attachments[0]["path"]
    assert path.startswith("/attachments/chart-") and path.endswith(".csv")
    assert path != "/attachments/chart.csv"
    assert await world.store.read_file(thread.id, path) == b"a,b\n1,2\n"
    assert f"Attachment path: {path}" in (row.content or "")
    record = await world.store.stat_file(thread.id, path)
    assert record is not None
    assert record.metadata["copied_from"]["path"] == "/attachments/chart.csv"


async def test_spec_session_stop_attachments_reach_a_non_blocking_parent_delivery(
    world: World, host: InlineHost
) -> None:
    async def draw(state: ThreadState) -> str:
        await state.write_file("/attachments/out.txt", b"result", "text/plain")
        return "drawn"

    world.register(define_tool("Write", draw, name="draw"))
    _family(
        world,
        ToolConfig(name="helper", blocking=False),
        TestScript()
        .add_tool_call("draw", {})
        .add_tool_call("finish", {"summary": "Done.", "files": ["/attachments/out.txt"]}),
        child_tools=["draw"],
    )
    world.script(
        "m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("a").add_text("b")
    )
    thread, _ = await world.chat("go")
    await host.idle()
    [delivery] = await _silent(world, thread.id)
    assert delivery.attachments is not None
    path = delivery.attachments[0]["path"]
    assert path.startswith("/attachments/out-")
    assert await world.store.read_file(thread.id, path) == b"result"
    assert delivery.content.startswith("Subagent (reference: ")
    assert f"Attachment path: {path}" in delivery.content


# --- ThreadState: set_status, stop_session options, get_parent_thread, prompt_path ---------


async def test_spec_state_set_status_and_stop_session_options(
    world: World, host: InlineHost
) -> None:
    async def wrap_up(state: ThreadState) -> str:
        await state.set_status("wrapping up")
        parent = await state.get_parent_thread()
        assert parent is not None
        [me] = await parent.children()
        assert me.child_status == "wrapping up"
        assert state.execution is not None
        state.execution.stop_session("quiet end", notify_parent=False, status="archived")
        return "ok"

    world.register(define_tool("Wrap up", wrap_up, name="wrap_up"))
    _family(
        world,
        ToolConfig(name="helper", blocking=False),
        TestScript().add_tool_call("wrap_up", {}).add_text("never"),
        child_tools=["wrap_up"],
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("asked"))
    thread, _ = await world.chat("go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert child.child_status == "archived"
    assert await _silent(world, thread.id) == []  # notify_parent=False: nothing delivered
    result = await world.engine.last_result(child.id)
    assert result is not None and result.stop_reason == "state_stop_session"


async def test_spec_set_status_long_text_is_one_line_of_at_most_64_characters(
    world: World, host: InlineHost
) -> None:
    long = "Reading\nchapter " + "x" * 100

    async def busy(state: ThreadState) -> str:
        await state.set_status(long)
        parent = await state.get_parent_thread()
        assert parent is not None
        [me] = await parent.children()
        return me.child_status

    world.register(define_tool("Busy", busy, name="busy"))
    _family(
        world,
        ToolConfig(name="helper", blocking=True),
        TestScript().add_tool_call("busy", {}).add_text("done"),
        child_tools=["busy"],
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("ok"))
    thread, _ = await world.chat("go")
    [child] = await world.store.list_children(thread.id)
    row = next(m for m in await world.messages(child.id) if m.role == "tool")
    assert row.content is not None and len(row.content) == 64
    assert row.content.startswith("Reading chapter xxx") and row.content.endswith("…")


async def test_spec_get_parent_thread_is_none_at_the_top_and_set_status_needs_a_parent(
    world: World,
) -> None:
    world.define(prompt("main"), agent("agent", "main"))
    thread = await world.thread()
    state = await world.engine.thread_state(thread.id)
    assert await state.get_parent_thread() is None
    with pytest.raises(RuntimeError, match="no parent"):
        await state.set_status("busy")


async def test_spec_execution_prompt_path_names_the_prompts_down_to_the_running_one(
    world: World,
) -> None:
    paths: list[list[str]] = []

    async def where(state: ThreadState) -> str:
        assert state.execution is not None
        paths.append(state.execution.prompt_path)
        return "here"

    world.register(define_tool("Where am I", where, name="where"))
    world.define(
        prompt("sub", tools=["where"]),
        prompt("main", tools=["where", "sub"]),
        agent("agent", "main"),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("where", {}, id="c1")
        .add_tool_call("sub", {}, id="c2")
        .add_tool_call("where", {}, id="c3")
        .add_text("sub done")
        .add_text("all done"),
    )
    await world.chat("go")
    assert paths == [["main"], ["main", "sub"]]


# --- subagent options ------------------------------------------------------------------------


async def test_spec_parent_communication_explicit_delivers_nothing_at_the_end(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        ToolConfig(name="helper", blocking=False, parent_communication="explicit"),
        TestScript().add_text("finished quietly"),
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("asked"))
    thread, _ = await world.chat("go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert child.child_status == "idle"
    assert await _silent(world, thread.id) == []


async def test_spec_hidden_relationship_is_left_out_of_the_subagents_listing(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        ToolConfig(name="helper", blocking=True, hidden=True),
        TestScript().add_text("done"),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("helper", {"message": "go"}, id="c1")
        .add_tool_call("subagents", {}, id="c2")
        .add_text("ok"),
    )
    world.define(
        prompt(
            "main",
            tools=[
                ToolConfig(name="helper", blocking=True, hidden=True),
                ToolConfig(name="lister", resumable={"receives_messages": "side_a"}),
            ],
        ),
        prompt("lister_prompt", model="mc"),
        AgentDefinition(name="lister", side_a=side("lister_prompt")),
    )
    thread, _ = await world.chat("go")
    rows = {m.tool_call_id: m for m in await world.messages(thread.id) if m.role == "tool"}
    assert len(await world.store.list_children(thread.id)) == 1
    assert rows["c2"].content == "No active subagent instances."


async def test_spec_scoped_env_copies_parent_values_into_the_child(
    world: World, host: InlineHost
) -> None:
    got: list[str] = []

    async def read_key(state: ThreadState) -> str:
        got.append(await state.env("REGION"))
        return "read"

    world.register(define_tool("Read env", read_key, name="read_key"))
    _family(
        world,
        ToolConfig(name="helper", blocking=True, scoped_env=["REGION"]),
        TestScript().add_tool_call("read_key", {}).add_text("done"),
        child_tools=["read_key"],
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("ok"))
    thread = await world.thread(env={"REGION": "eu-west"})
    await world.run(thread.id, "go")
    assert got == ["eu-west"]


async def test_spec_scoped_env_missing_refuses_the_child_with_its_names(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        ToolConfig(name="helper", blocking=True, scoped_env=["REGION"]),
        TestScript().add_text("never"),
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("ok"))
    thread, _ = await world.chat("go")
    [row] = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert row.tool_status == "error"
    assert "requires scoped environment variables" in (row.content or "")
    assert "REGION" in (row.content or "")
    assert await world.store.list_children(thread.id) == []


# --- ThreadState: delete_message, user(), instance_env, runtime context -----------------------


async def test_spec_state_delete_message_removes_it_and_its_tool_results(world: World) -> None:
    world.define(prompt("main"), agent("agent", "main"))
    world.script("m", TestScript().add_tool_call("missing_tool", {}, id="c1").add_text("ok"))
    thread, _ = await world.chat("hello")
    rows = await world.messages(thread.id)
    caller = next(m for m in rows if m.tool_calls)
    state = await world.engine.thread_state(thread.id)
    assert await state.delete_message(caller.id) is True
    left = await world.messages(thread.id)
    assert caller.id not in {m.id for m in left}
    assert not [m for m in left if m.role == "tool"]  # its result went with it
    deleted = [f["data"]["id"] for f in world.sink.events(thread.id, "message_deleted")]
    assert caller.id in deleted and len(deleted) == 2
    assert await state.delete_message(caller.id) is False


async def test_spec_state_delete_message_cancels_a_queued_message(world: World) -> None:
    world.define(prompt("main"), agent("agent", "main"))
    thread = await world.thread()
    state = await world.engine.thread_state(thread.id)
    queued = await state.queue_message("later")
    assert await state.delete_message(queued) is True
    assert await world.store.list_queued(thread.id) == []


async def test_spec_state_user_instance_env_and_runtime_context(world: World) -> None:
    world.define(prompt("main"), agent("agent", "main"))
    world.harness.set_instance_env("REGION", "instance-value", "text")
    owned = await world.thread(user_id="alice", env={"REGION": "thread-value"})
    state = await world.engine.thread_state(owned.id)
    assert await state.env("REGION") == "thread-value"
    assert await state.instance_env("REGION") == "instance-value"
    with pytest.raises(KeyError, match="NOPE"):
        await state.instance_env("NOPE")
    user = await state.user()
    assert user is not None and user.username == "alice"
    unowned = await world.engine.thread_state((await world.thread()).id)
    assert await unowned.user() is None
    context = state.not_packable_runtime_context
    assert context["store"] is not None and context["runtime"] == "standard-agents-studio"
    with pytest.raises(TypeError):
        context["store"] = None  # type: ignore[index]


# --- PromptToolConfig: env, initAttachmentsProperty, initAgentNameProperty ---------------------


async def test_spec_prompt_tool_entry_env_is_seen_by_the_call(world: World) -> None:
    seen: list[tuple[str, str]] = []

    async def where(state: ThreadState) -> str:
        seen.append((await state.env("TARGET"), await state.env_type("TARGET")))
        return "ok"

    world.register(define_tool("Where to", where, name="where"))
    world.define(
        prompt("main", tools=[ToolConfig(name="where", env={"TARGET": "staging"})]),
        agent("agent", "main"),
    )
    world.script("m", TestScript().add_tool_call("where", {}).add_text("done"))
    thread = await world.thread()
    await world.run(thread.id, "go")
    # A literal entry value is prompt-level: a secret (issue #38 item 7).
    assert seen == [("staging", "secret")]
    # Outside that call it is not seen.
    state = await world.engine.thread_state(thread.id)
    with pytest.raises(EnvNotFound):
        await state.env("TARGET")


async def test_spec_init_attachments_property_gives_a_subprompt_the_files(world: World) -> None:
    world.define(
        prompt("reader", model="mr", required_schema={"type": "object"}),
        prompt(
            "main",
            tools=[
                ToolConfig(
                    name="reader",
                    init_user_message_property="task",
                    init_attachments_property="files",
                )
            ],
        ),
        agent("agent", "main"),
    )
    world.script("mr", TestScript().add_text("read"))
    args = {"task": "Summarize", "files": ["/attachments/a.txt", "/attachments/none.txt", "/x"]}
    world.script("m", TestScript().add_tool_call("reader", args).add_text("ok"))
    thread = await world.thread()
    await world.store.write_file(thread.id, "/attachments/a.txt", b"alpha", "text/plain")
    await world.run(thread.id, "go")
    init = next(m for m in await world.messages(thread.id) if m.depth == 1 and m.role == "user")
    assert init.content == "Summarize"
    assert [a["path"] for a in init.attachments or []] == ["/attachments/a.txt"]


async def test_spec_init_attachments_and_agent_name_properties_reach_a_child(
    world: World, host: InlineHost
) -> None:
    entry = ToolConfig(
        name="helper",
        blocking=True,
        init_attachments_property="files",
        init_agent_name_property="label",
    )
    _family(world, entry, TestScript().add_text("got it"))
    args = {"message": "Read this", "files": ["/attachments/a.txt"], "label": "Reader 1"}
    world.script("m", TestScript().add_tool_call("helper", args).add_text("ok"))
    thread = await world.thread()
    await world.store.write_file(thread.id, "/attachments/a.txt", b"alpha", "text/plain")
    await world.run(thread.id, "go")
    [child] = await world.store.list_children(thread.id)
    assert child.display_name == "Reader 1"
    first = (await world.messages(child.id))[0]
    assert first.content == "Read this"
    [ref] = first.attachments or []
    assert ref["path"].startswith("/attachments/a-")
    assert await world.store.read_file(child.id, ref["path"]) == b"alpha"


async def test_spec_init_attachments_property_reaches_a_background_child(
    world: World, host: InlineHost
) -> None:
    entry = ToolConfig(
        name="helper",
        blocking=False,
        init_attachments_property="files",
        init_agent_name_property="label",
        env={"MODE": "fast"},
    )
    modes: list[str] = []

    async def mode(state: ThreadState) -> str:
        modes.append(await state.env("MODE"))
        return "ok"

    world.register(define_tool("Mode", mode, name="mode"))
    _family(
        world,
        entry,
        TestScript().add_tool_call("mode", {}).add_text("got it"),
        child_tools=["mode"],
    )
    args = {"message": "Read", "files": ["/attachments/a.txt"], "label": "Bg"}
    world.script("m", TestScript().add_tool_call("helper", args).add_text("a").add_text("b"))
    thread = await world.thread()
    await world.store.write_file(thread.id, "/attachments/a.txt", b"alpha", "text/plain")
    await world.run(thread.id, "go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert child.display_name == "Bg"
    first = (await world.messages(child.id))[0]
    [ref] = first.attachments or []
    assert await world.store.read_file(child.id, ref["path"]) == b"alpha"
    assert modes == ["fast"]  # the entry's env went with the child


@pytest.mark.parametrize(
    ("ending", "arguments"),
    [
        ({"end_session_tool": "close", "session_stop": None}, {"note": "bye"}),
        ({"session_stop": SessionToolBinding(name="close")}, {}),
    ],
    ids=["endSessionTool", "sessionStop-without-messageProperty"],
)
async def test_reference_child_result_without_message_property_is_its_last_top_level_message(
    world: World, host: InlineHost, ending: dict[str, Any], arguments: dict[str, Any]
) -> None:
    """Reference §4.12: "The result text comes from the sessionStop/sessionFail tool's
    messageProperty if bound, otherwise from the last top-level message." The parent's next
    request carries the child's words, not the end tool's arguments or its "Done"."""
    _family(
        world,
        ToolConfig(name="helper", blocking=True),
        TestScript().add_text("There are 42 apples.").add_tool_call("close", arguments),
        stop_on_response=False,
        **ending,
    )
    world.script("m", TestScript().add_tool_call("helper", {"message": "Count"}).add_text("ok"))
    await world.chat("go")
    tool = [m for m in world.requests("m")[-1].messages if m["role"] == "tool"]
    assert [m["content"].split("\n\nReference: ")[0] for m in tool] == ["There are 42 apples."]
