"""agents-spec §2 (definitions, execution flow) and §3 (agent types)."""

from __future__ import annotations

import uuid

from runtime.core.spec import AgentDefinition
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt, side


@define_tool("Look something up")
async def lookup(state: object) -> str:
    return "found it"


async def test_spec_2_1_thread_id_is_cryptographically_unique_uuid(world: World) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript())
    ids = {(await world.thread()).id for _ in range(50)}
    assert len(ids) == 50
    for thread_id in ids:
        parsed = uuid.UUID(thread_id)
        assert parsed.version == 4 and str(parsed) == thread_id


async def test_spec_2_1_thread_persists_across_sessions(world: World) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_text("first answer").add_text("second answer"))
    thread, first = await world.chat("hello")
    second = await world.run(thread.id, "again")
    assert first.session_id != second.session_id
    contents = [m.content for m in await world.messages(thread.id)]
    assert contents == ["hello", "first answer", "again", "second answer"]
    # The second request saw the first session's messages: the thread is the persistent context.
    assert [m["content"] for m in world.requests()[1].messages] == contents[:3]


async def test_spec_2_1_step_is_one_llm_invocation_and_turn_may_span_steps(world: World) -> None:
    world.define(prompt(tools=["lookup"]), agent())
    world.register(lookup)
    world.script("m", TestScript().add_tool_call("lookup").add_tool_call("lookup").add_text("done"))
    _, result = await world.chat("go")
    assert len(world.requests()) == 3
    assert (result.steps, result.turns) == (3, 1)


async def test_spec_2_2_ai_human_flow_runs_until_text_then_waits(world: World) -> None:
    world.define(prompt(tools=["lookup"]), agent())
    world.register(lookup)
    world.script("m", TestScript().add_tool_call("lookup", id="c1").add_text("Here it is"))
    thread, result = await world.chat("find it")
    assert result.stop_reason == "stop_on_response"
    roles = [(m.role, m.content) for m in await world.messages(thread.id)]
    assert roles == [
        ("user", "find it"),
        ("assistant", None),
        ("tool", "found it"),
        ("assistant", "Here it is"),
    ]


async def test_spec_3_1_ai_human_side_a_is_the_ai_and_needs_no_side_b(world: World) -> None:
    world.define(prompt(), AgentDefinition(name="agent", type="ai_human", side_a=side("main")))
    world.script("m", TestScript().add_text("hi human"))
    thread, result = await world.chat("hi")
    messages = await world.messages(thread.id)
    assert [(m.role, m.side) for m in messages] == [("user", "b"), ("assistant", "a")]
    assert result.turn_outcomes[0].side == "a"


async def test_spec_3_3_type_defaults_to_ai_human(world: World) -> None:
    definition = AgentDefinition(name="agent", side_a=side("main"))
    assert definition.type == "ai_human"
    world.define(prompt(), definition)
    world.script("m", TestScript().add_text("one reply"))
    _, result = await world.chat("hi")
    assert (result.turns, result.stop_reason) == (1, "stop_on_response")


def _debate(**options: object) -> AgentDefinition:
    return AgentDefinition(
        name="agent",
        type="dual_ai",
        side_a=side("pro", label="Pro"),
        side_b=side("con", label="Con"),
        **options,  # type: ignore[arg-type]
    )


async def test_spec_3_2_dual_ai_each_side_sees_itself_as_assistant(world: World) -> None:
    world.define(prompt("pro", model="ma"), prompt("con", model="mb"), _debate(max_session_turns=3))
    world.script("ma", TestScript().add_text("A1").add_text("A2"))
    world.script("mb", TestScript().add_text("B1"))
    await world.chat("Topic: tea")
    a_second = world.requests("ma")[1].messages
    assert [(m["role"], m["content"]) for m in a_second] == [
        ("user", "Topic: tea"),
        ("assistant", "A1"),
        ("user", "B1"),
    ]
    b_first = world.requests("mb")[0].messages
    # The opening message was authored by side B's seat (stored as user): B sees it as its own.
    assert [(m["role"], m["content"]) for m in b_first] == [
        ("assistant", "Topic: tea"),
        ("user", "A1"),
    ]


async def test_spec_3_2_dual_ai_stored_roles_follow_the_side_table(world: World) -> None:
    world.define(prompt("pro", model="ma"), prompt("con", model="mb"), _debate(max_session_turns=4))
    world.script("ma", TestScript().add_text("A1").add_text("A2"))
    world.script("mb", TestScript().add_text("B1").add_text("B2"))
    thread, result = await world.chat("Topic")
    stored = [(m.content, m.role, m.side) for m in await world.messages(thread.id)]
    assert stored == [
        ("Topic", "user", "b"),
        ("A1", "assistant", "a"),
        ("B1", "user", "b"),
        ("A2", "assistant", "a"),
        ("B2", "user", "b"),
    ]
    assert [t.side for t in result.turn_outcomes] == ["a", "b", "a", "b"]


async def test_spec_3_2_dual_ai_replay_of_stored_roles_is_stable(world: World) -> None:
    """Re-assembling a side's context from storage gives the same request every time."""
    world.define(prompt("pro", model="ma"), prompt("con", model="mb"), _debate(max_session_turns=2))
    world.script("ma", TestScript().add_text("A1").add_text("A again"))
    world.script("mb", TestScript().add_text("B1").add_text("B again"))
    thread, _ = await world.chat("Topic")
    await world.run(thread.id, side="b")  # a new session: side B acts first, from storage
    replayed = world.requests("mb")[1].messages
    assert [(m["role"], m["content"]) for m in replayed] == [
        ("assistant", "Topic"),
        ("user", "A1"),
        ("assistant", "B1"),
    ]


async def test_spec_3_2_dual_ai_each_side_gets_only_its_own_prompt_tools(world: World) -> None:
    @define_tool("Pro evidence")
    async def pro_tool(state: object) -> str:
        return "x"

    @define_tool("Con evidence")
    async def con_tool(state: object) -> str:
        return "y"

    world.register(pro_tool, con_tool)
    world.define(
        prompt("pro", model="ma", tools=["pro_tool"]),
        prompt("con", model="mb", tools=["con_tool"]),
        _debate(max_session_turns=2),
    )
    world.script("ma", TestScript().add_text("A1"))
    world.script("mb", TestScript().add_text("B1"))
    await world.chat("Topic")
    assert [t.name for t in world.requests("ma")[0].tools] == ["pro_tool"]
    assert [t.name for t in world.requests("mb")[0].tools] == ["con_tool"]


async def test_spec_3_2_dual_ai_hides_the_other_sides_tool_calls(world: World) -> None:
    world.register(lookup)
    world.define(
        prompt("pro", model="ma", tools=["lookup"]),
        prompt("con", model="mb"),
        _debate(max_session_turns=2),
    )
    world.script("ma", TestScript().add_tool_call("lookup", id="a-call").add_text("A says"))
    world.script("mb", TestScript().add_text("B says"))
    await world.chat("Topic")
    b_sees = world.requests("mb")[0].messages
    assert all(m["role"] != "tool" and not m.get("tool_calls") for m in b_sees)
    assert [m["content"] for m in b_sees] == ["Topic", "A says"]
