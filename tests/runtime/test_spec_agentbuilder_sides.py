"""Sides written for the AgentBuilder agents API run in the spec's terms.

``maxTurns`` is ``maxSteps``, ``endConversationTool`` is ``endSessionTool`` and
``manualStopCondition: true`` turns ``stopOnResponse`` off (docs/definitions.md). The
agents are parsed from the AgentBuilder JSON shape, as a definition file is.
"""

from __future__ import annotations

from typing import Any

from runtime.definitions import AgentDefinition
from runtime.providers.test_provider import TestScript
from runtime.registry import define_tool
from runtime.validation import parse_and_validate
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


async def test_spec_agentbuilder_max_turns_limits_the_side_as_max_steps(world: World) -> None:
    script = TestScript()
    for _ in range(5):
        script.add_tool_call("lookup")
    _agentbuilder_world(world, {"stopOnResponse": False, "maxTurns": 2}, script)
    _, result = await world.chat("q")
    assert len(world.requests()) == 2
    assert result.stop_reason == "max_side_steps"


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


async def test_spec_agentbuilder_dual_ai_ends_when_both_sides_stopped(world: World) -> None:
    # Both sides stop only by their step limit (stopOnResponse on, but they only call tools).
    _dual_agentbuilder(world, 20, {"maxTurns": 2}, {"maxTurns": 3})
    world.script("ma", _runaway(10))
    world.script("mb", _runaway(10))
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "max_side_steps"),
        ("b", "max_side_steps"),
    ]
    assert result.stop_reason == "both_sides_stopped"
    assert (len(world.requests("ma")), len(world.requests("mb"))) == (2, 3)


async def test_spec_agentbuilder_one_side_stopped_does_not_end_the_session(world: World) -> None:
    _dual_agentbuilder(world, 3, {"maxTurns": 2}, {})
    world.script("ma", _runaway(2).add_text("A again"))
    world.script("mb", TestScript().add_text("B answers").add_text("unused"))
    _, result = await world.chat("go")
    assert [(t.side, t.reason) for t in result.turn_outcomes] == [
        ("a", "max_side_steps"),
        ("b", "stop_on_response"),
        # Side A spent its steps in its first turn: it is stopped again (issue #38 item 2).
        ("a", "max_side_steps"),
    ]
    assert result.stop_reason == "max_session_turns"
