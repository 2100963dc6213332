"""Spec 0.15 subagents (``SubagentToolConfig``): blocking and non-blocking children, resumable
relationships with the injected lifecycle tools, the registry, queueing to the parent,
``notify_parent``, ``after_subagent_created`` and events forwarded to the parent (UAP §8.7)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import AgentDefinition, ResumableConfig, ToolConfig
from runtime.delegation.inline_host import InlineHost
from runtime.engine import Engine, NewMessage, ThreadTerminated
from runtime.providers.test_provider import TestScript
from runtime.state import ThreadState
from runtime.tools.registry import define_hook, define_tool
from tests.runtime.conftest import World, agent, prompt, side
from tests.waiting import await_until


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


def _family(world: World, entry: ToolConfig, child_script: TestScript, **child: Any) -> None:
    world.define(
        prompt("main", tools=[entry]),
        agent("agent", "main"),
        prompt("helper_prompt", model="mc", text="You help.", **child.pop("prompt_options", {})),
        AgentDefinition(
            name="helper",
            description="Looks things up",
            side_a=side("helper_prompt", **child),
        ),
    )
    world.script("mc", child_script)


async def _tool_rows(world: World, thread_id: str) -> list[Any]:
    return [m for m in await world.messages(thread_id) if m.role == "tool"]


async def test_spec_subagent_blocking_returns_child_result_with_reference(
    world: World, host: InlineHost
) -> None:
    _family(world, ToolConfig(name="helper", blocking=True), TestScript().add_text("42 apples"))
    world.script(
        "m",
        TestScript().add_tool_call("helper", {"message": "Count apples"}, id="c1").add_text("done"),
    )
    thread, result = await world.chat("go")
    row = (await _tool_rows(world, thread.id))[0]
    child_id = row.subagent_id
    assert child_id and row.tool_status == "success"
    assert row.content == f"42 apples\n\nReference: {child_id}"
    child = await world.store.get_thread(child_id)
    assert child is not None and child.parent_id == thread.id
    assert child.child_status == "idle"
    # Blocking: nothing is delivered later.
    await host.idle()
    assert not [m for m in await world.messages(thread.id) if m.silent]


async def test_spec_subagent_non_blocking_delivers_result_as_silent_message_and_parent_runs(
    world: World, host: InlineHost
) -> None:
    _family(world, ToolConfig(name="helper", blocking=False), TestScript().add_text("found it"))
    parent_script = (
        TestScript()
        .add_tool_call("helper", {"message": "Find the file"}, id="c1")
        .add_text("I asked the helper.")
        .add_text("The helper found it.")
    )
    world.script("m", parent_script)
    thread, result = await world.chat("go")
    row = (await _tool_rows(world, thread.id))[0]
    child_id = row.subagent_id
    assert row.content == f"The subagent was initiated successfully. Reference: {child_id}"
    await host.idle()
    rows = await world.messages(thread.id)
    delivered = [m for m in rows if m.silent]
    assert len(delivered) == 1
    assert delivered[0].role == "user"
    assert delivered[0].content == (
        f"Subagent (reference: {child_id}) has returned the following result:\n\nfound it"
    )
    assert delivered[0].metadata["subagent_id"] == child_id
    # The parent ran again on the delivery, and its model saw it.
    assert rows[-1].content == "The helper found it."
    last_request = world.requests()[-1]
    assert any("has returned the following result" in str(m) for m in last_request.messages)
    child = await world.store.get_thread(child_id)
    assert child is not None and child.child_status == "idle"


async def test_spec_subagent_failure_is_delivered_as_failure(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        ToolConfig(name="helper", blocking=False),
        TestScript().add_error("upstream broke", code="invalid_request", status=400),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("helper", {"message": "Try"}, id="c1")
        .add_text("waiting")
        .add_text("It failed."),
    )
    thread, _ = await world.chat("go")
    await host.idle()
    delivered = [m for m in await world.messages(thread.id) if m.silent]
    child_id = delivered[0].metadata["subagent_id"]
    assert delivered[0].content.startswith(
        f"Subagent (reference: {child_id}) has reported a failure:\n\n"
    )
    child = await world.store.get_thread(child_id)
    assert child is not None and child.child_status == "failed"


async def test_spec_subagent_blocking_failure_is_a_failed_tool_result(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        ToolConfig(name="helper", blocking=True),
        TestScript().add_error("upstream broke", code="invalid_request", status=400),
    )
    world.script(
        "m", TestScript().add_tool_call("helper", {"message": "Try"}, id="c1").add_text("sorry")
    )
    thread, _ = await world.chat("go")
    row = (await _tool_rows(world, thread.id))[0]
    assert row.tool_status == "error"
    assert f"Reference: {row.subagent_id}" in (row.content or "")


def _resumable(world: World, blocking: bool, max_instances: int | None, script: TestScript) -> None:
    entry = ToolConfig(
        name="helper",
        blocking=blocking,
        resumable=ResumableConfig(receives_messages="side_a", max_instances=max_instances),
    )
    _family(world, entry, script)


async def test_spec_subagent_create_is_injected_and_requires_a_name(
    world: World, host: InlineHost
) -> None:
    _resumable(world, True, None, TestScript().add_text("hi"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": " ", "message": "x"})
        .add_text("ok"),
    )
    thread, _ = await world.chat("go")
    offered = {t.name: t for t in world.requests()[0].tools}
    assert "helper" not in offered  # resumable: only through the lifecycle tools
    assert set(offered) >= {"subagent_create", "subagents"}
    assert "subagent_message" not in offered  # no live child yet
    schema = offered["subagent_create"].parameters
    assert {"agent", "name", "message"} <= set(schema["required"])
    assert schema["properties"]["name"]["minLength"] == 1
    row = (await _tool_rows(world, thread.id))[0]
    assert row.tool_status == "error" and "subagent_create requires name." in (row.content or "")
    assert await world.store.list_children(thread.id) == []


async def test_spec_subagent_create_arguments_follow_child_required_schema(
    world: World, host: InlineHost
) -> None:
    entry = ToolConfig(name="helper", blocking=True, resumable=ResumableConfig())
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    _family(
        world, entry, TestScript().add_text("sunny"), prompt_options={"required_schema": schema}
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "W", "message": "Weather?"})
        .add_tool_call(
            "subagent_create",
            {"agent": "helper", "name": "W", "message": "Weather?", "arguments": {"city": "Oslo"}},
        )
        .add_text("ok"),
    )
    thread, _ = await world.chat("go")
    offered = {t.name: t for t in world.requests()[0].tools}
    assert offered["subagent_create"].parameters["properties"]["arguments"] == schema
    first, second = await _tool_rows(world, thread.id)
    assert first.tool_status == "error" and "city" in (first.content or "")
    assert second.tool_status == "success" and second.content.startswith("sunny")


async def test_spec_subagent_resumable_messaging_and_registry(
    world: World, host: InlineHost
) -> None:
    _resumable(world, True, None, TestScript().add_text("first answer").add_text("second answer"))
    thread = await world.thread()
    parent = (
        TestScript()
        .add_tool_call(
            "subagent_create", {"agent": "helper", "name": "Researcher", "message": "Q1"}, id="c1"
        )
        .add_text("created")
        .add_tool_call("subagent_message", {"referenceId": "CHILD", "message": "Q2"}, id="c2")
        .add_tool_call("subagents", {}, id="c3")
        .add_text("all done")
    )
    world.script("m", parent)
    await world.run(thread.id, "go")
    create_row = (await _tool_rows(world, thread.id))[0]
    child_id = create_row.subagent_id
    assert create_row.content == f"first answer\n\nReference: {child_id}"
    children = await world.store.list_children(thread.id)
    assert [(c.id, c.display_name, c.relationship, c.child_status) for c in children] == [
        (child_id, "Researcher", "helper", "idle")
    ]
    assert children[0].created_at > 0
    # The model learns the reference from the result; the script is fixed up front.
    script = world.scripted["m"].script
    assert script is not None and script[2].tool_calls
    call = script[2].tool_calls[0]
    call.arguments = {"referenceId": child_id, "message": "Q2"}
    await world.run(thread.id, "ask again")
    offered = {t.name for t in world.requests()[-1].tools}
    assert "subagent_message" in offered  # a live child exists now
    rows = await _tool_rows(world, thread.id)
    assert rows[1].content == f"second answer\n\nReference: {child_id}"
    assert rows[2].content == f"- {child_id}: helper — idle (Researcher)"
    child_texts = [(m.role, m.content) for m in await world.messages(child_id)]
    assert child_texts == [
        ("user", "Q1"),
        ("assistant", "first answer"),
        ("user", "Q2"),
        ("assistant", "second answer"),
    ]


async def test_spec_subagent_resumable_non_blocking_message_is_queued_to_child(
    world: World, host: InlineHost
) -> None:
    _resumable(world, False, None, TestScript().add_text("a1").add_text("a2"))
    parent = (
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "R", "message": "Q1"})
        .add_text("started")
        .add_text("got a1")
        .add_tool_call("subagent_message", {"referenceId": "CHILD", "message": "Q2"})
        .add_text("sent")
        .add_text("got a2")
    )
    world.script("m", parent)
    thread, _ = await world.chat("go")
    await host.idle()
    child_id = (await world.store.list_children(thread.id))[0].id
    script = world.scripted["m"].script
    assert script is not None and script[3].tool_calls
    script[3].tool_calls[0].arguments = {"referenceId": child_id, "message": "Q2"}
    await world.run(thread.id, "more")
    rows = await _tool_rows(world, thread.id)
    assert rows[-1].content == f"Message sent to subagent {child_id}."
    await host.idle()
    delivered = [m.content for m in await world.messages(thread.id) if m.silent]
    assert [d.split("\n\n")[-1] for d in delivered] == ["a1", "a2"]


async def test_spec_subagent_max_instances_refused_with_clear_error(
    world: World, host: InlineHost
) -> None:
    _resumable(world, False, 1, TestScript().add_text("one"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "A", "message": "x"})
        .add_tool_call("subagent_create", {"agent": "helper", "name": "B", "message": "y"})
        .add_text("ok")
        .add_text("noted"),
    )
    thread, _ = await world.chat("go")
    await host.idle()
    first, second = await _tool_rows(world, thread.id)
    assert first.tool_status == "success"
    assert second.tool_status == "error"
    assert second.content == (
        "Failed to execute tool: Subagent instance limit reached for helper (maxInstances: 1, "
        "active: 1). Use subagent_message to talk to an existing instance."
    )
    assert len(await world.store.list_children(thread.id)) == 1


async def test_spec_subagent_blocking_single_instance_create_continues_the_existing_child(
    world: World, host: InlineHost
) -> None:
    _resumable(world, True, 1, TestScript().add_text("one").add_text("two"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "A", "message": "x"})
        .add_tool_call("subagent_create", {"agent": "helper", "name": "B", "message": "y"})
        .add_text("ok"),
    )
    thread, _ = await world.chat("go")
    [child] = await world.store.list_children(thread.id)
    first, second = await _tool_rows(world, thread.id)
    assert first.content == f"one\n\nReference: {child.id}"
    assert second.tool_status == "success" and second.subagent_id == child.id
    assert second.content == f"two\n\nReference: {child.id}"
    assert child.display_name == "A"
    assert [(m.role, m.content) for m in await world.messages(child.id)] == [
        ("user", "x"),
        ("assistant", "one"),
        ("user", "y"),
        ("assistant", "two"),
    ]


async def test_spec_after_subagent_created_hook_gets_parent_and_child_state(
    world: World, host: InlineHost
) -> None:
    seen: list[tuple[str, str | None, str]] = []

    async def created(state: ThreadState, child: ThreadState) -> None:
        seen.append((state.thread_id, child.parent_id, child.thread_id))

    world.register(define_hook("after_subagent_created", created, id="track"))
    _family(world, ToolConfig(name="helper", blocking=True), TestScript().add_text("r"))
    world.define(prompt("main", tools=[ToolConfig(name="helper", blocking=True)], hooks=["track"]))
    world.script("m", TestScript().add_tool_call("helper", {"message": "x"}).add_text("ok"))
    thread, _ = await world.chat("go")
    child_id = (await world.store.list_children(thread.id))[0].id
    assert seen == [(thread.id, thread.id, child_id)]


async def test_spec_notify_parent_queues_silent_message_and_wakes_parent(
    world: World, host: InlineHost
) -> None:
    async def report(state: ThreadState) -> str:
        await state.notify_parent("halfway there")
        return "reported"

    world.register(define_tool("Report progress", report, name="report"))
    _family(world, ToolConfig(name="helper", blocking=False), TestScript())
    world.define(prompt("helper_prompt", model="mc", tools=["report"]))
    world.script("mc", TestScript().add_tool_call("report", {}).add_text("finished"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("helper", {"message": "work"})
        .add_text("started")
        .add_text("noted")
        .add_text("noted again"),
    )
    thread, _ = await world.chat("go")
    await host.idle()
    silent = [m for m in await world.messages(thread.id) if m.silent]
    assert silent[0].content == "halfway there"
    assert silent[0].metadata["parent_notification"] is True
    assert silent[-1].content.endswith("finished")


async def test_spec_queue_message_to_idle_thread_starts_a_session(
    world: World, host: InlineHost
) -> None:
    world.define(prompt("main"), agent("agent", "main"))
    world.script("m", TestScript().add_text("first").add_text("answer to queued"))
    thread, _ = await world.chat("hello")
    state = await world.engine.thread_state(thread.id)
    await state.queue_message("queued later")
    await host.idle()
    contents = [m.content for m in await world.messages(thread.id)]
    assert contents == ["hello", "first", "queued later", "answer to queued"]


async def test_spec_uap_8_7_child_events_forwarded_to_parent_stream(
    world: World, host: InlineHost
) -> None:
    _family(world, ToolConfig(name="helper", blocking=True), TestScript().add_text("result"))
    world.script(
        "m", TestScript().add_tool_call("helper", {"message": "x"}, id="c9").add_text("ok")
    )
    thread, _ = await world.chat("go")
    child_id = (await world.store.list_children(thread.id))[0].id
    start = world.sink.events(thread.id, "subagent_start")
    inner = world.sink.events(thread.id, "subagent_event")
    end = world.sink.events(thread.id, "subagent_end")
    assert len(start) == 1 and len(end) == 1
    assert start[0]["data"]["subagentId"] == child_id
    assert start[0]["data"]["subagentType"] == "helper"
    assert start[0]["data"]["parentToolCallId"] == "c9"
    assert start[0]["data"]["prompt"] == "x"
    assert end[0]["data"]["success"] is True and end[0]["data"]["result"] == "result"
    wrapped = [f["data"]["innerEvent"]["type"] for f in inner]
    assert "message_data" in wrapped and "step_started" in wrapped
    # The child's own listeners get the frames unwrapped.
    assert world.sink.of_type(child_id, "message_data")


async def test_spec_subagent_attachments_copied_with_new_paths(
    world: World, host: InlineHost
) -> None:
    _resumable(world, True, None, TestScript().add_text("read it"))
    world.script(
        "m",
        TestScript()
        .add_tool_call(
            "subagent_create",
            {"agent": "helper", "name": "R", "message": "Read", "attachments": ["/docs/a.txt"]},
        )
        .add_text("ok"),
    )
    thread = await world.thread()
    await world.store.write_file(thread.id, "/docs/a.txt", b"hello", "text/plain")
    await world.run(thread.id, "go")
    child_id = (await world.store.list_children(thread.id))[0].id
    first = (await world.messages(child_id))[0]
    assert first.attachments is not None
    path = first.attachments[0]["path"]
    assert path.startswith("/attachments/a-") and path.endswith(".txt")
    assert await world.store.read_file(child_id, path) == b"hello"


# --- robustness: runs that die, deliveries that must not be lost ---------------------------


class WorkerDied(BaseException):
    """Stands for the death of the process (nothing in it catches this)."""


def _break_once(store: Any, method: str, when: Any, error: BaseException) -> None:
    """Make the store's ``method`` raise ``error`` once, on the first call ``when`` accepts."""
    original = getattr(store, method)
    armed = [True]

    async def broken(*args: Any, **kwargs: Any) -> Any:
        if armed[0] and when(*args):
            armed[0] = False
            raise error
        return await original(*args, **kwargs)

    setattr(store, method, broken)


def _delivery_to(parent_id: str) -> Any:
    return lambda thread_id, message: (
        thread_id == parent_id and "subagent_status" in (message.metadata or {})
    )


async def test_spec_subagent_run_that_dies_outside_the_engine_is_delivered_as_failure(
    world: World, host: InlineHost
) -> None:
    _family(world, ToolConfig(name="helper", blocking=False), TestScript().add_text("never"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("helper", {"message": "Try"}, id="c1")
        .add_text("waiting")
        .add_text("It crashed."),
    )
    thread = await world.thread()
    # The child's first write fails: its session dies outside the engine's own error handling.
    _break_once(
        world.store, "commit", lambda thread_id, commit: thread_id != thread.id, OSError("disk")
    )
    await world.run(thread.id, "go")
    with pytest.raises(OSError):
        await host.idle()

    # The failure's delivery wakes the parent; over PostgreSQL its turn could still be
    # running when idle() raised the child's error (a CI run read 'waiting').
    async def answered() -> bool:
        return (await world.messages(thread.id))[-1].content == "It crashed."

    await await_until(answered, "the parent's turn after the failure's delivery")
    [child] = await world.store.list_children(thread.id)
    assert child.child_status == "failed"
    delivered = [m for m in await world.messages(thread.id) if m.silent]
    assert [m.content for m in delivered] == [
        f"Subagent (reference: {child.id}) has reported a failure:\n\n"
        "The agent run failed unexpectedly: OSError"
    ]
    assert delivered[0].metadata["subagent_status"] == "failed"
    assert (await world.messages(thread.id))[-1].content == "It crashed."
    end = world.sink.events(thread.id, "subagent_end")[-1]["data"]
    assert end["success"] is False and end["subagentId"] == child.id


async def test_spec_subagent_blocking_child_that_dies_is_not_left_running(
    world: World, host: InlineHost
) -> None:
    _family(world, ToolConfig(name="helper", blocking=True), TestScript().add_text("fine"))
    world.script("m", TestScript().add_tool_call("helper", {"message": "x"}).add_text("ok"))
    thread = await world.thread()
    _break_once(
        world.store, "commit", lambda thread_id, commit: thread_id != thread.id, OSError("disk")
    )
    with pytest.raises(OSError):  # a store failure ends the caller's session too
        await world.run(thread.id, "go")
    [child] = await world.store.list_children(thread.id)
    assert child.child_status == "failed"
    # The caller's session resumes later: the same child runs again and settles.
    await world.run(thread.id)
    row = (await _tool_rows(world, thread.id))[0]
    assert row.tool_status == "success" and row.subagent_id == child.id
    settled = await world.store.get_thread(child.id)
    assert settled is not None and settled.child_status == "idle"


async def test_spec_subagent_delivery_survives_a_crash_after_the_child_s_last_commit(
    world: World, host: InlineHost
) -> None:
    _family(world, ToolConfig(name="helper", blocking=False), TestScript().add_text("found it"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("helper", {"message": "Find"}, id="c1")
        .add_text("waiting")
        .add_text("Got it."),
    )
    thread = await world.thread()
    # The process dies after the child's final commit, while queueing its result.
    _break_once(world.store, "queue_message", _delivery_to(thread.id), WorkerDied())
    await world.run(thread.id, "go")
    with pytest.raises(WorkerDied):
        await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert (await world.store.load_progress(child.id)).finished  # type: ignore[union-attr]
    assert not [m for m in await world.messages(thread.id) if m.silent]
    # A new process (engine and host) is told to look at the child, as the sweep does.
    revived = InlineHost()
    revived.engine = Engine(
        world.store,
        world.sink,
        registry=world.registry,
        providers=world.providers,
        sleep=world._sleep,
        subagent_host=revived,
    )
    for _ in range(2):  # a repeated retry delivers nothing twice
        await revived.wake(child.id)
        await revived.idle()
    delivered = [m for m in await world.messages(thread.id) if m.silent]
    assert [m.content for m in delivered] == [
        f"Subagent (reference: {child.id}) has returned the following result:\n\nfound it"
    ]
    assert (await world.messages(thread.id))[-1].content == "Got it."
    settled = await world.store.get_thread(child.id)
    assert settled is not None and settled.child_status == "idle"


# --- terminate -------------------------------------------------------------------------------


async def test_spec_terminated_child_leaves_the_live_registry(
    world: World, host: InlineHost
) -> None:
    _resumable(world, True, None, TestScript().add_text("first answer"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "R", "message": "Q1"})
        .add_text("created")
        .add_tool_call("subagents", {})
        .add_text("listed"),
    )
    thread, _ = await world.chat("go")
    [child] = await world.store.list_children(thread.id)
    parent_state = await world.engine.thread_state(thread.id)
    child_state = await parent_state.get_child_thread(child.id)
    assert child_state is not None and child_state.terminated is False
    await child_state.terminate()
    assert child_state.terminated is True
    await world.run(thread.id, "list them")
    assert "subagent_message" not in {t.name for t in world.requests()[-1].tools}
    assert (await _tool_rows(world, thread.id))[
        -1
    ].content == f"- {child.id}: helper — terminated (R)"
    record = await world.store.get_thread(child.id)
    assert record is not None and record.terminated and record.child_status == "terminated"
    assert await parent_state.get_child_thread(child.id) is None
    with pytest.raises(ThreadTerminated):
        await world.engine.run_session(child.id, message=NewMessage("more?"))


async def test_spec_child_terminating_itself_delivers_nothing(
    world: World, host: InlineHost
) -> None:
    async def quit_now(state: ThreadState) -> str:
        await state.terminate()
        return "bye"

    world.register(define_tool("Stop for good", quit_now, name="quit_now"))
    _family(world, ToolConfig(name="helper", blocking=False), TestScript())
    world.define(prompt("helper_prompt", model="mc", tools=["quit_now"]))
    world.script("mc", TestScript().add_tool_call("quit_now", {}).add_text("never said"))
    world.script("m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("started"))
    thread, _ = await world.chat("go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert child.child_status == "terminated" and child.terminated
    assert not [m for m in await world.messages(thread.id) if m.silent]
    assert "never said" not in [m.content for m in await world.messages(child.id)]


# --- immediate -------------------------------------------------------------------------------


async def test_spec_immediate_subagent_starts_with_the_first_flow_once(
    world: World, host: InlineHost
) -> None:
    entry = ToolConfig(name="helper", blocking=False, immediate=True)
    _family(world, entry, TestScript().add_text("helper ready"))
    world.script("m", TestScript().add_text("hello").add_text("the helper is ready"))
    thread = await world.thread()
    await world.run(thread.id)  # a flow on the empty thread (a continue)
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert (child.relationship, child.child_status) == ("helper", "idle")
    boot = (await _all(world, child.id))[0]
    assert boot.silent and boot.role == "user" and boot.metadata["subagent_boot"] is True
    delivered = [m.content for m in await world.messages(thread.id) if m.silent]
    assert delivered == [
        f"Subagent (reference: {child.id}) has returned the following result:\n\nhelper ready"
    ]
    assert (await world.messages(thread.id))[-1].content == "the helper is ready"
    # Later flows (the conversation is not empty any more) start nothing.
    world.script("m", TestScript().add_text("again"))
    await world.run(thread.id, "more")
    await host.idle()
    assert len(await world.store.list_children(thread.id)) == 1


async def test_spec_immediate_subagent_waits_for_an_empty_conversation_and_its_gate(
    world: World, host: InlineHost
) -> None:
    gated = ToolConfig(name="helper", blocking=False, immediate=True, optional="USE_HELPER")
    _family(world, gated, TestScript().add_text("helper ready"))
    world.script("m", TestScript().add_text("hi").add_text("hello"))
    talked, _ = await world.chat("hello")  # the flow starts with a visible message
    await host.idle()
    assert await world.store.list_children(talked.id) == []
    quiet = await world.thread()
    await world.run(quiet.id)  # empty, but the optional gate is off
    await host.idle()
    assert await world.store.list_children(quiet.id) == []


async def _all(world: World, thread_id: str) -> list[Any]:
    from runtime.store.protocol import MessageQuery

    query = MessageQuery(limit=None, include_silent=True, max_depth=None)
    return (await world.store.list_messages(thread_id, query)).messages
