"""Spec rules the engine once contradicted (issue #15), over every store of the engine suite.

- ``forceTurn`` "has no effect on ai_human agents" (spec 0.10 ``ExecutionState.forceTurn``).
- ``maxSessionTurns``: "Hard maximum: 250 turns regardless of this setting" (capped, not refused).
- ``getMessages`` pages like ``GET /api/threads/{id}/messages`` (``order`` picks the end).
- ``maxSteps`` forces the *side* to stop (agents-spec §5.4): in ``dual_ai`` its turn ends and
  the session goes on until a session-level condition holds (§2.2, §6.1); the budget warning
  counts the steps of the turn it speaks of.
"""

from __future__ import annotations

from typing import Any

from runtime.definitions import AgentDefinition
from runtime.messages import Message, new_id
from runtime.providers.test_provider import TestScript
from runtime.registry import define_tool
from runtime.store import Commit
from tests.runtime.conftest import World, agent, prompt, side


@define_tool("Search the knowledge base")
async def search(state: Any) -> str:
    return "result"


@define_tool("Hand the turn to side B")
async def hand_to_b(state: Any) -> str:
    state.execution.force_turn("b")
    return "handed"


def _dual(world: World, turns: int, script_a: TestScript, script_b: TestScript, **b: Any) -> None:
    world.register(search, hand_to_b)
    world.define(
        prompt("pro", model="ma", tools=["search", "hand_to_b"]),
        prompt("con", model="mb", tools=["search"]),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=turns,
            side_a=side("pro"),
            side_b=side("con", **b),
        ),
    )
    world.script("ma", script_a)
    world.script("mb", script_b)


# --- forceTurn -----------------------------------------------------------------------------


async def test_spec_force_turn_has_no_effect_on_ai_human_agents(world: World) -> None:
    world.register(hand_to_b)
    world.define(prompt(tools=["hand_to_b"]), agent())
    world.script("m", TestScript().add_tool_call("hand_to_b").add_text("still mine"))
    _, result = await world.chat("x")
    # The session went on exactly as without the call: the model answered the tool result.
    assert result.stop_reason == "stop_on_response" and result.final_text == "still mine"
    assert len(world.requests()) == 2
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [("a", "stop_on_response")]


async def test_spec_force_turn_still_switches_sides_in_dual_ai(world: World) -> None:
    _dual(world, 1, TestScript().add_tool_call("hand_to_b"), TestScript().add_text("B speaks"))
    _, result = await world.chat("x")
    assert [t.side for t in result.turn_outcomes] == ["b"]


# --- maxSessionTurns -------------------------------------------------------------------------


async def test_spec_max_session_turns_above_250_is_capped_at_250(world: World) -> None:
    a, b = TestScript(), TestScript()
    for i in range(130):
        a.add_text(f"A{i}")
        b.add_text(f"B{i}")
    world.define(
        prompt("pro", model="ma"),
        prompt("con", model="mb"),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=400,
            side_a=side("pro"),
            side_b=side("con"),
        ),
    )
    world.script("ma", a)
    world.script("mb", b)
    _, result = await world.chat("go")
    assert result.stop_reason == "max_session_turns"
    assert len(result.turn_outcomes) == 250
    assert len(world.requests("ma")) + len(world.requests("mb")) == 250


# --- getMessages paging ----------------------------------------------------------------------


async def _thread_with(world: World, n: int) -> Any:
    world.define(prompt(), agent())
    thread = await world.thread()
    rows = [
        Message(id=new_id(), role="user", content=f"m{i}", created_at=1_000_000 + i)
        for i in range(n)
    ]
    await world.store.commit(thread.id, Commit(messages=rows))
    return await world.engine.thread_state(thread.id)


async def test_spec_get_messages_asc_pages_from_the_oldest_end(world: World) -> None:
    state = await _thread_with(world, 5)
    first = await state.get_messages(limit=2, order="asc")
    assert [m.content for m in first.messages] == ["m0", "m1"]
    assert (first.total, first.has_more) == (5, True)
    second = await state.get_messages(limit=2, offset=2, order="asc")
    assert [m.content for m in second.messages] == ["m2", "m3"] and second.has_more
    last = await state.get_messages(limit=2, offset=4, order="asc")
    assert [m.content for m in last.messages] == ["m4"] and not last.has_more
    beyond = await state.get_messages(limit=2, offset=9, order="asc")
    assert beyond.messages == [] and not beyond.has_more


async def test_spec_get_messages_desc_pages_from_the_newest_end(world: World) -> None:
    state = await _thread_with(world, 5)
    default = await state.get_messages(limit=2)
    newest = await state.get_messages(limit=2, order="desc")
    assert [m.content for m in default.messages] == [m.content for m in newest.messages]
    assert [m.content for m in newest.messages] == ["m3", "m4"] and newest.has_more
    older = await state.get_messages(limit=2, offset=2, order="desc")
    assert [m.content for m in older.messages] == ["m1", "m2"] and older.has_more
    oldest = await state.get_messages(limit=2, offset=4, order="desc")
    assert [m.content for m in oldest.messages] == ["m0"] and not oldest.has_more


# --- maxSteps in dual_ai ---------------------------------------------------------------------


async def test_spec_dual_ai_max_steps_ends_the_sides_turn_not_the_session(world: World) -> None:
    runaway = TestScript()
    for _ in range(6):
        runaway.add_tool_call("search")
    _dual(world, 4, TestScript().add_text("A1").add_text("A2"), runaway, max_steps=3)
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "stop_on_response"),
        ("b", "max_side_steps"),
        ("a", "stop_on_response"),
        ("b", "max_side_steps"),
    ]
    assert result.stop_reason == "max_session_turns"
    assert len(world.requests("mb")) == 6  # three steps in each of B's two turns


async def test_spec_dual_ai_session_ends_only_on_a_session_condition(world: World) -> None:
    """A side at its maxSteps hands over; an end-session tool of the other side ends it all."""
    world.register(search)

    @define_tool("Close the debate")
    async def close(state: Any) -> str:
        return "closed"

    world.register(close)
    world.define(
        prompt("pro", model="ma", tools=["search"]),
        prompt("con", model="mb", tools=["close"]),
        AgentDefinition(
            name="agent",
            type="dual_ai",
            max_session_turns=50,
            side_a=side("pro", max_steps=2),
            side_b=side("con", end_session_tool="close"),
        ),
    )
    world.script("ma", TestScript().add_tool_call("search").add_tool_call("search"))
    world.script("mb", TestScript().add_tool_call("close"))
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "max_side_steps"),
        ("b", "session_stop"),
    ]
    assert (result.stop_reason, result.stopped_by) == ("session_stop", "b")


async def test_spec_budget_warning_counts_the_steps_of_this_turn(world: World) -> None:
    """The warning says "your last step (N of N) in this turn": in a side's second turn it
    comes at that turn's last step, not after the side's steps of earlier turns."""
    b = TestScript()
    for _ in range(6):
        b.add_tool_call("search")
    _dual(world, 4, TestScript().add_text("A1").add_text("A2"), b, max_steps=3)
    await world.chat("go")
    warned = [
        any(m["role"] == "system" and "last step (3 of 3)" in m["content"] for m in r.messages)
        for r in world.requests("mb")
    ]
    assert warned == [False, False, True, False, False, True]
