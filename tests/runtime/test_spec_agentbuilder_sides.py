"""Sides written for the AgentBuilder agents API run in the spec's terms.

``maxTurns`` caps the turns a side takes ("Maximum turns this side can take before stopping":
in a dual_ai session; in an ai_human conversation, whose sessions are one turn each), ``endConversationTool``
is ``endSessionTool`` and ``manualStopCondition: true`` turns ``stopOnResponse`` off
(docs/definitions.md). The agents are parsed from the AgentBuilder JSON shape, as a definition
file is.
"""

from __future__ import annotations

from typing import Any

from runtime.core.spec import AgentDefinition
from runtime.definitions.validation import parse_and_validate
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, prompt


@define_tool("Search the knowledge base")
async def lookup(state: Any) -> str:
    return "result"


@define_tool("Close the ticket for good")
async def resolve_ticket(state: Any) -> str:
    return "closed"


@define_tool("Hand the stop to code, as a hook would")
async def finish_now(state: Any) -> str:
    state.execution.stop()
    return "stopping"


def _agentbuilder_world(world: World, side_a: dict[str, Any], script: TestScript) -> World:
    data = {"name": "agent", "type": "ai_human", "sideA": {"prompt": "main", **side_a}}
    defn, errors = parse_and_validate("agents", data)
    assert not errors and isinstance(defn, AgentDefinition)
    world.register(lookup, resolve_ticket, finish_now)
    world.define(prompt(tools=["lookup", "resolve_ticket", "finish_now"]), defn)
    world.script("m", script)
    return world


async def test_spec_agentbuilder_max_turns_caps_the_ai_sides_turns_in_an_ai_human_conversation(
    world: World,
) -> None:
    """ "Maximum turns this side can take before stopping": an ai_human session is one turn of
    side A, so its turns are counted over the conversation. Steps within a turn are not
    turns (before, maxTurns: 2 capped the first reply at two steps)."""
    script = TestScript().add_tool_call("lookup").add_tool_call("lookup").add_text("one")
    script.add_text("two")
    _agentbuilder_world(world, {"maxTurns": 2}, script)
    thread, first = await world.chat("q1")
    second = await world.run(thread.id, "q2")
    third = await world.run(thread.id, "q3")
    assert (first.stop_reason, second.stop_reason) == ("stop_on_response", "stop_on_response")
    assert len(world.requests()) == 4  # the third message reaches no model
    assert third.stop_reason == "max_side_turns"
    last = (await world.messages(thread.id))[-1]
    assert (last.role, last.content) == (
        "assistant",
        "This conversation reached its limit of 2 turns (maxTurns).",
    )
    warned = [
        any("last turn (2 of 2)" in str(m["content"]) for m in r.messages) for r in world.requests()
    ]
    assert warned == [False, False, False, True]


async def test_spec_agentbuilder_end_conversation_tool_ends_the_session(world: World) -> None:
    script = TestScript().add_tool_call("resolve_ticket").add_text("never used")
    _agentbuilder_world(world, {"endConversationTool": "resolve_ticket"}, script)
    _, result = await world.chat("q")
    assert result.stop_reason == "session_stop"
    assert len(world.requests()) == 1


async def test_spec_agentbuilder_manual_stop_condition_text_does_not_end_the_turn(
    world: World,
) -> None:
    script = TestScript().add_text("first").add_text("second").add_tool_call("finish_now")
    script.add_text("never used")
    _agentbuilder_world(world, {"manualStopCondition": True}, script)
    _, result = await world.chat("q")
    assert len(world.requests()) == 3  # two text replies went on; code stopped it
    assert result.stop_reason == "state_stop_session"


def _dual_agentbuilder(world: World, turns: int, a: dict[str, Any], b: dict[str, Any]) -> None:
    data = {
        "name": "agent",
        "type": "dual_ai",
        "maxSessionTurns": turns,
        "sideA": {"prompt": "pro", **a},
        "sideB": {"prompt": "con", **b},
    }
    defn, errors = parse_and_validate("agents", data)
    assert not errors and isinstance(defn, AgentDefinition)
    world.register(lookup)
    world.define(
        prompt("pro", model="ma", tools=["lookup"]), prompt("con", model="mb", tools=["lookup"])
    )
    world.define(defn)


def _runaway(steps: int) -> TestScript:
    script = TestScript()
    for _ in range(steps):
        script.add_tool_call("lookup")
    return script


def _talker(replies: int, who: str) -> TestScript:
    script = TestScript()
    for i in range(replies):
        script.add_text(f"{who}{i}")
    return script


async def test_spec_agentbuilder_max_turns_is_the_maximum_turns_this_side_can_take_before_stopping(
    world: World,
) -> None:
    """Agents API SideConfig ``maxTurns``: "Maximum turns this side can take before stopping";
    "Both Sides Stopped: End when both sides stop". Each side answers in one step, so a cap on
    steps would never bite: the sides take 2 and 3 turns, and the last turn is announced."""
    _dual_agentbuilder(world, 20, {"maxTurns": 2}, {"maxTurns": 3})
    world.script("ma", _talker(10, "A"))
    world.script("mb", _talker(10, "B"))
    _, result = await world.chat("go")
    assert [t.side for t in result.turn_outcomes] == ["a", "b", "a", "b", "b"]
    assert result.stop_reason == "both_sides_stopped"
    assert (len(world.requests("ma")), len(world.requests("mb"))) == (2, 3)
    warned = [
        [m["content"] for m in r.messages if m["role"] == "system" and "last turn" in m["content"]]
        for r in world.requests("mb")
    ]
    assert warned == [
        [],
        [],
        [
            "Turn budget: this is your last turn (3 of 3) in this session. "
            "Make it count; you will not be called again after this turn."
        ],
    ]


async def test_spec_agentbuilder_one_side_stopped_does_not_end_the_session(world: World) -> None:
    """ "maxTurns - Ends side's participation": the other side goes on until its own stop."""
    _dual_agentbuilder(world, 4, {"maxTurns": 1}, {})
    world.script("ma", _talker(3, "A"))
    world.script("mb", _talker(3, "B"))
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "stop_on_response"),
        ("b", "stop_on_response"),
        ("b", "stop_on_response"),
        ("b", "stop_on_response"),
    ]
    assert result.stop_reason == "max_session_turns"
    assert (len(world.requests("ma")), len(world.requests("mb"))) == (1, 3)
