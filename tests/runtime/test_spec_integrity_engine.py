"""Issue #38 at the engine's edge: settings that were accepted and then ignored, observed in
the request the model receives and the messages the thread stores."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from runtime.core.spec import AgentDefinition, ResumableConfig, ToolConfig
from runtime.delegation.inline_host import InlineHost
from runtime.providers.test_provider import TestScript
from runtime.state import ThreadState
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt, side
from tests.runtime.delegation.test_spec_subagents import host  # noqa: F401  (the fixture)

_SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string"}, "city": {"type": "string"}},
    "required": ["task", "city"],
}


def _child(world: World, entry: ToolConfig, **agent_options: Any) -> None:
    world.define(
        prompt("main", tools=[entry]),
        agent("agent", "main"),
        prompt("child_prompt", model="mc", text="You help.", required_schema=_SCHEMA),
        AgentDefinition(name="helper", side_a=side("child_prompt"), **agent_options),
    )
    world.script("mc", TestScript().add_text("done"))


def _seen_arguments(request: Any) -> dict[str, Any]:
    """The initial arguments the child's model was sent (the silent system message)."""
    texts = [m["content"] for m in request.messages if m["role"] == "system"]
    found = [t for t in texts if isinstance(t, str) and t.startswith("Initial arguments:\n")]
    assert found, f"no initial-arguments message among {request.messages}"
    return json.loads(found[0].split("\n", 1)[1])  # type: ignore[no-any-return]


async def test_spec_item1_subagent_create_arguments_reach_the_child(
    world: World,
    host: InlineHost,  # noqa: F811
) -> None:
    _child(world, ToolConfig(name="helper", blocking=True, resumable=ResumableConfig()))
    args = {
        "agent": "helper",
        "name": "W",
        "message": "Weather?",
        "arguments": {"task": "t", "city": "Oslo"},
    }
    world.script("m", TestScript().add_tool_call("subagent_create", args).add_text("ok"))
    thread, _ = await world.chat("go")
    assert _seen_arguments(world.requests("mc")[0]) == {"task": "t", "city": "Oslo"}
    assert world.requests("mc")[0].messages[-1]["content"] == "Weather?"
    (child,) = await world.store.list_children(thread.id)
    rows = await world.messages(child.id)
    assert rows[0].role == "system" and rows[0].silent
    assert rows[0].metadata["subagent_arguments"] == {"task": "t", "city": "Oslo"}
    assert (child.subagent or {})["arguments"] == {"task": "t", "city": "Oslo"}


async def test_spec_item1_agent_tool_arguments_beyond_the_message_reach_the_child(
    world: World,
) -> None:
    entry = ToolConfig(name="helper", init_user_message_property="task")
    _child(world, entry, expose_as_tool=True, tool_description="Helps")
    world.script(
        "m",
        TestScript().add_tool_call("helper", {"task": "Look it up", "city": "Oslo"}).add_text("k"),
    )
    await world.chat("go")
    request = world.requests("mc")[0]
    assert request.messages[-1]["content"] == "Look it up"
    assert _seen_arguments(request) == {"city": "Oslo"}


async def test_spec_item1_handoff_arguments_beyond_the_message_reach_the_new_agent(
    world: World,
) -> None:
    _child(world, ToolConfig(name="helper", init_user_message_property="task"))
    world.script("m", TestScript().add_tool_call("helper", {"task": "Take over", "city": "Oslo"}))
    thread, _ = await world.chat("go")
    request = world.requests("mc")[0]
    assert _seen_arguments(request) == {"city": "Oslo"}
    assert request.messages[-1]["content"] == "Take over"
    seeded = [m for m in await world.messages(thread.id) if m.role == "system"]
    assert len(seeded) == 1 and seeded[0].silent


# --- item 7: a prompt tool entry's env is prompt-level -----------------------------------------

_ENTRY_VALUE = "entry-level-token-4f9c2a"


def _env_world(world: World, seen: list[tuple[str, str]]) -> None:
    async def where(state: ThreadState) -> str:
        value = await state.env("TARGET")
        seen.append((value, await state.env_type("TARGET")))
        return f"target is {value}"

    world.register(define_tool("Where to", where, name="where"))
    world.define(
        prompt("main", tools=[ToolConfig(name="where", env={"TARGET": _ENTRY_VALUE})]),
        agent("agent", "main"),
    )
    world.script("m", TestScript().add_tool_call("where", {}).add_text("done"))


async def test_spec_item7_thread_values_override_a_prompt_tool_entry_env(world: World) -> None:
    seen: list[tuple[str, str]] = []
    _env_world(world, seen)
    thread = await world.thread(env={"TARGET": "production"})
    await world.run(thread.id, "go")
    assert seen == [("production", "secret")]


async def test_spec_item7_prompt_level_tool_entry_values_stay_secret(world: World) -> None:
    seen: list[tuple[str, str]] = []
    _env_world(world, seen)
    thread = await world.thread()
    await world.run(thread.id, "go")
    assert seen == [(_ENTRY_VALUE, "secret")]
    (tool_row,) = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert _ENTRY_VALUE not in (tool_row.content or "")
    # Nor did the model get it back in the next request.
    assert _ENTRY_VALUE not in json.dumps(world.requests()[-1].messages)


# --- item 8: the stop tool's outcome, abortSignal, setValue ------------------------------------


async def test_spec_stop_tool_response_property_is_extracted_from_the_stop_tool_result(
    world: World,
) -> None:
    @define_tool("Classify the request")
    async def classify(state: ThreadState) -> dict[str, str]:
        return {"intent": "refund_approved"}  # the tool decides, not the model's guess

    world.register(classify)
    world.define(
        prompt("main", tools=["helper"]),
        agent("agent", "main"),
        prompt("child_prompt", model="mc", text="Classify.", tools=["classify"]),
        AgentDefinition(
            name="helper",
            expose_as_tool=True,
            tool_description="Classifies",
            side_a=side("child_prompt", stop_tool="classify", stop_tool_response_property="intent"),
        ),
    )
    world.script("mc", TestScript().add_tool_call("classify", {"intent": "refund"}))
    world.script("m", TestScript().add_tool_call("helper", {"message": "money back"}).add_text("k"))
    thread, _ = await world.chat("hi")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert tool_row.content == "refund_approved"


async def test_spec_execution_abort_signal_fires_when_the_user_presses_stop(world: World) -> None:
    started = asyncio.Event()
    saw: list[bool] = []

    @define_tool("A long export")
    async def export(state: ThreadState) -> str:
        started.set()
        assert state.execution is not None
        try:
            await asyncio.wait_for(state.execution.abort_signal.wait(), timeout=5)
        except TimeoutError:
            saw.append(False)
            return "finished the long export"
        saw.append(True)
        return "export abandoned"

    world.register(export)
    world.define(prompt("main", tools=["export"]), agent("agent", "main"))
    world.script("m", TestScript().add_tool_call("export", {}).add_text("never sent"))
    thread = await world.thread()
    session = asyncio.ensure_future(world.run(thread.id, "go"))
    await asyncio.wait_for(started.wait(), timeout=5)
    world.harness.press_stop(thread.id)
    result = await asyncio.wait_for(session, timeout=10)
    assert saw == [True]
    assert result.stop_reason == "aborted_by_user"
    assert len(world.requests()) == 1


# --- item 2: maxSteps counts per side -----------------------------------------------------------


async def test_spec_max_steps_counts_the_sides_steps_when_every_step_is_a_turn(
    world: World,
) -> None:
    """agents-spec §6.2 "per-side step counts (for maxSteps)": with stopOnResponse false and no
    stop tool every step is a turn, and the limit, the warning and "both sides stopped" hold."""
    a, b = TestScript(), TestScript()
    for i in range(10):
        a.add_text(f"A{i}")
        b.add_text(f"B{i}")
    world.define(
        prompt("pro", model="ma"),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=20,
            side_a=side("pro", stop_on_response=False, max_steps=2),
            side_b=side("con", stop_on_response=False, max_steps=2),
        ),
    )
    world.script("ma", a)
    world.script("mb", b)
    _, result = await world.chat("go")
    assert result.stop_reason == "both_sides_stopped"
    assert (len(world.requests("ma")), len(world.requests("mb"))) == (2, 2)
    warned = [
        any(m["role"] == "system" and "last step (2 of 2)" in m["content"] for m in r.messages)
        for r in world.requests("ma")
    ]
    assert warned == [False, True]


# --- the spec MUSTs: setValue values and emit data are JSON --------------------------------------


async def _tool_error(world: World, body: Any) -> tuple[str, str]:
    world.register(define_tool("Keep something", body, name="keep"))
    world.define(prompt("main", tools=["keep"]), agent("agent", "main"))
    world.script("m", TestScript().add_tool_call("keep", {}).add_text("done"))
    thread, _ = await world.chat("go")
    (row,) = [m for m in await world.messages(thread.id) if m.role == "tool"]
    return thread.id, f"{row.tool_status}: {row.content}"


async def test_spec_set_value_values_must_be_json_serializable(world: World) -> None:
    async def keep(state: ThreadState) -> str:
        await state.set_value("when", {"at": object()})
        return "kept"

    thread_id, said = await _tool_error(world, keep)
    assert said.startswith("error:") and "setValue('when') value must be JSON-serializable" in said
    assert await world.store.get_value(thread_id, "when") is None


async def test_spec_emit_data_must_be_json_serializable(world: World) -> None:
    async def keep(state: ThreadState) -> str:
        state.emit("progress", {"done": {1, 2}})
        return "emitted"

    thread_id, said = await _tool_error(world, keep)
    assert said.startswith("error:") and "emit('progress') data must be JSON-serializable" in said
    assert not world.sink.of_type(thread_id, "progress")


# --- item 10: files returned by a blocking child's end-session tool ------------------------------


async def test_spec_end_session_tool_attachments_are_copied_back_to_the_parent(
    world: World,
) -> None:
    @define_tool("Finish with the report")
    async def finish(state: ThreadState) -> dict[str, Any]:
        report = {"name": "report.txt", "mimeType": "text/plain", "data": "UmVwb3J0IQ=="}
        return {"status": "success", "result": "Report ready", "attachments": [report]}

    world.register(finish)
    world.define(
        prompt("main", tools=[ToolConfig(name="helper", blocking=True)]),
        agent("agent", "main"),
        prompt("child_prompt", model="mc", text="Write it.", tools=["finish"]),
        AgentDefinition(
            name="helper",
            expose_as_tool=True,
            tool_description="Writes reports",
            side_a=side("child_prompt", end_session_tool="finish"),
        ),
    )
    world.script("mc", TestScript().add_tool_call("finish", {}))
    world.script("m", TestScript().add_tool_call("helper", {"message": "Report"}).add_text("k"))
    thread, _ = await world.chat("go")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert tool_row.attachments, tool_row
    path = tool_row.attachments[0]["path"]
    assert path.startswith("/attachments/") and path.endswith(".txt")
    assert f"Attachment path: {path}" in (tool_row.content or "")
    assert await world.store.read_file(thread.id, path) == b"Report!"
