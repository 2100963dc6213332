"""agents-spec §7 (agents as tools): child threads for exposeAsTool agents, handoffs otherwise."""

from __future__ import annotations

from typing import Any

from runtime.core.spec import AgentDefinition, ToolConfig
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_hook
from tests.runtime.conftest import World, agent, prompt, side


def _specialist(world: World, script: TestScript, **options: Any) -> None:
    world.define(
        prompt("main", tools=[options.pop("entry", "specialist")]),
        agent("agent", "main"),
        prompt(
            "specialist_prompt",
            model="ms",
            text="You are the specialist.",
            **options.pop("prompt_options", {}),
        ),
        AgentDefinition(
            name="specialist",
            expose_as_tool=True,
            tool_description="Hand off to specialist for complex issues",
            side_a=side("specialist_prompt", **options),
        ),
    )
    world.script("ms", script)


async def test_spec_7_1_tool_description_is_shown_to_the_llm(world: World) -> None:
    _specialist(world, TestScript().add_text("unused"))
    world.script("m", TestScript().add_text("no tools needed"))
    await world.chat("hello")
    offered = {t.name: t for t in world.requests()[0].tools}
    assert offered["specialist"].description == "Hand off to specialist for complex issues"
    assert offered["specialist"].parameters["required"] == ["message"]


async def test_spec_7_2_agent_as_tool_runs_in_new_thread_and_returns_result(world: World) -> None:
    _specialist(world, TestScript().add_text("The specialist's verdict: replace the part."))
    world.script(
        "m",
        TestScript()
        .add_tool_call("specialist", {"message": "Customer's kettle leaks"}, id="call-1")
        .add_text("Our specialist says: replace the part."),
    )
    thread, result = await world.chat("My kettle leaks")
    rows = await world.messages(thread.id)
    tool_row = next(m for m in rows if m.role == "tool")
    assert tool_row.content == "The specialist's verdict: replace the part."
    assert tool_row.tool_status == "success"
    child_id = tool_row.subagent_id
    assert child_id is not None and child_id != thread.id
    child = await world.store.get_thread(child_id)
    assert child is not None and child.parent_id == thread.id and child.agent_name == "specialist"
    child_rows = [(m.role, m.content) for m in await world.messages(child_id)]
    assert child_rows == [
        ("user", "Customer's kettle leaks"),
        ("assistant", "The specialist's verdict: replace the part."),
    ]
    # The calling prompt continued its execution after the result came back.
    assert result.final_text == "Our specialist says: replace the part."
    assert world.requests()[1].messages[-1]["content"] == tool_row.content
    # The parent's thread never contains the child's messages.
    assert all(m.content != "Customer's kettle leaks" for m in rows)


async def test_spec_7_1_agents_as_tools_should_have_access_controls_child_keeps_owner(
    world: World,
) -> None:
    _specialist(world, TestScript().add_text("done"))
    world.script("m", TestScript().add_tool_call("specialist", {"message": "x"}).add_text("ok"))
    thread = await world.thread(user_id="alice")
    await world.run(thread.id, "hi")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    child = await world.store.get_thread(tool_row.subagent_id or "")
    assert child is not None and child.user_id == "alice"


async def test_spec_7_2_agent_tool_returns_the_stop_tool_value(world: World) -> None:
    _specialist(
        world,
        TestScript().add_tool_call("classify", {"intent": "refund"}),
        stop_tool="classify",
        stop_tool_response_property="intent",
    )
    world.script(
        "m", TestScript().add_tool_call("specialist", {"message": "money back pls"}).add_text("ok")
    )
    thread, _ = await world.chat("hi")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert tool_row.content == "refund"


async def test_spec_7_2_failed_child_session_is_an_error_result(world: World) -> None:
    _specialist(world, TestScript().add_error("upstream down", "server_error", 503))
    world.script("m", TestScript().add_tool_call("specialist", {"message": "x"}).add_text("sorry"))
    thread, result = await world.chat("hi")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert tool_row.tool_status == "error" and "step_error" in (tool_row.content or "")
    assert result.stop_reason == "stop_on_response"


async def test_spec_7_2_init_user_message_property_selects_the_input(world: World) -> None:
    _specialist(
        world,
        TestScript().add_text("ok"),
        entry=ToolConfig(name="specialist", init_user_message_property="question"),
        prompt_options={
            "required_schema": {
                "type": "object",
                "properties": {"question": {"type": "string"}, "priority": {"type": "integer"}},
                "required": ["question"],
            }
        },
    )
    world.script(
        "m",
        TestScript().add_tool_call("specialist", {"question": "Why?", "priority": 2}).add_text("k"),
    )
    await world.chat("hi")
    assert world.requests("ms")[0].messages[-1]["content"] == "Why?"


async def test_spec_7_2_agent_tool_arguments_are_validated(world: World) -> None:
    _specialist(world, TestScript().add_text("unused"))
    world.script("m", TestScript().add_tool_call("specialist", {"msg": "typo"}).add_text("oops"))
    thread, _ = await world.chat("hi")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert tool_row.tool_status == "error" and "message" in (tool_row.content or "")
    assert world.requests("ms") == []


async def test_after_subagent_created_and_after_thread_created_hooks_see_the_child(
    world: World,
) -> None:
    seen: list[tuple[str, str, str | None]] = []

    async def on_child(state: Any, child_state: Any) -> None:
        seen.append(("subagent", state.thread_id, child_state.parent_id))

    async def on_thread(state: Any) -> None:
        seen.append(("thread", state.thread_id, state.parent_id))

    world.register(
        define_hook("after_subagent_created", on_child),
        define_hook("after_thread_created", on_thread),
    )
    _specialist(world, TestScript().add_text("done"))
    world.define(prompt("main", tools=["specialist"], hooks=["on_child", "on_thread"]))
    world.define(
        prompt("specialist_prompt", model="ms", hooks=["on_thread"]),
    )
    world.script("m", TestScript().add_tool_call("specialist", {"message": "x"}).add_text("ok"))
    thread, _ = await world.chat("hi")
    child_id = next(m for m in await world.messages(thread.id) if m.role == "tool").subagent_id
    assert ("thread", thread.id, None) in seen
    assert ("thread", child_id, thread.id) in seen
    assert ("subagent", thread.id, thread.id) in seen


# --- handoffs (ai_human agents that are not exposed as tools) ------------------------------------


def _handoff_world(world: World, **entry: Any) -> None:
    tool_entry = ToolConfig(name="billing", **entry) if entry else "billing"
    world.define(
        prompt("main", tools=[tool_entry]),
        agent("agent", "main"),
        prompt(
            "billing_prompt",
            model="mb",
            text="You handle billing.",
            required_schema={"type": "object", "properties": {"issue": {"type": "string"}}},
        ),
        AgentDefinition(name="billing", title="Billing", side_a=side("billing_prompt")),
    )


async def test_I10_handoff_switches_the_thread_agent_keeps_the_origin(world: World) -> None:
    _handoff_world(world, init_user_message_property="issue")
    world.script("m", TestScript().add_tool_call("billing", {"issue": "double charge"}))
    world.script("mb", TestScript().add_text("I'll refund the duplicate charge."))
    thread, result = await world.chat("I was charged twice")
    record = await world.store.get_thread(thread.id)
    assert record is not None
    assert (record.agent_name, record.origin_agent_name) == ("billing", "agent")
    rows = [(m.role, m.content) for m in await world.messages(thread.id)]
    assert rows == [
        ("user", "I was charged twice"),
        ("assistant", None),
        ("tool", "Handoff complete"),
        ("user", "double charge"),
        ("assistant", "I'll refund the duplicate charge."),
    ]
    assert result.stop_reason == "stop_on_response" and result.turns == 1
    assert world.sink.of_type(thread.id, "agent_handoff")[0]["new_agent_id"] == "billing"


async def test_handoff_tool_is_described_and_uses_the_target_schema(world: World) -> None:
    _handoff_world(world)
    world.script("m", TestScript().add_text("no handoff"))
    await world.chat("hi")
    offered = {t.name: t for t in world.requests()[0].tools}
    assert offered["billing"].description == "Hand off conversation to Billing agent"
    assert "issue" in offered["billing"].parameters["properties"]


async def test_after_handoff_later_sessions_run_the_new_agent(world: World) -> None:
    _handoff_world(world)
    world.script("m", TestScript().add_tool_call("billing", {}))
    world.script("mb", TestScript().add_text("billing here").add_text("still billing"))
    thread, _ = await world.chat("help")
    await world.run(thread.id, "and now?")
    assert len(world.requests("m")) == 1 and len(world.requests("mb")) == 2
