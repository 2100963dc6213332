"""Spec 0.2.0 subagents on the side (audit rows A4, A5): ``sideX.subagents[]`` gives the owning
side's prompt the lifecycle tools (per agent, never through the shared prompt), ``as`` names the
relationship, ``description`` replaces the child's toolDescription, ``blocking`` defaults to
false, ``maxInstances`` sits at the top level, and every child is a persistent thread whose
ends (success or failure) settle its registry entry to ``idle``."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import AgentDefinition
from runtime.delegation.inline_host import InlineHost
from runtime.engine import Engine
from runtime.providers.test_provider import TestScript
from tests.runtime.conftest import World, prompt


@pytest.fixture
def host(world: World) -> InlineHost:
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


def _v2(name: str, side_a: dict[str, Any], side_b: dict[str, Any] | None = None) -> AgentDefinition:
    """An agent written as a 0.2.0 file would be (a person on side B unless given)."""
    return AgentDefinition.model_validate(
        {"name": name, "sideA": side_a, "sideB": side_b or {"human": True}}
    )


def _family(world: World, relationship: dict[str, Any], child: TestScript) -> None:
    """``agent`` (side A owns ``relationship``), ``plain`` (same prompt, no relationship) and the
    child agent ``helper``."""
    world.define(
        prompt("main"),
        _v2("agent", {"prompt": "main", "subagents": [relationship]}),
        _v2("plain", {"prompt": "main"}),
        prompt("helper_prompt", model="mc", text="You help."),
        AgentDefinition.model_validate(
            {
                "name": "helper",
                "exposeAsTool": True,
                "toolDescription": "Looks things up",
                "sideA": {"prompt": "helper_prompt"},
                "sideB": {"human": True},
            }
        ),
    )
    world.script("mc", child)


async def _tool_rows(world: World, thread_id: str) -> list[Any]:
    return [m for m in await world.messages(thread_id) if m.role == "tool"]


async def test_A4_side_subagents_give_this_agent_s_side_the_lifecycle_tools(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        {"agent": "helper", "as": "researcher", "description": "Digs up sources"},
        TestScript().add_text("sources"),
    )
    world.script("m", TestScript().add_text("hi").add_text("hello"))
    await world.chat("go")
    offered = {t.name: t for t in world.requests()[0].tools}
    assert set(offered) == {"subagent_create", "subagents"}  # not "helper" by name
    create = offered["subagent_create"]
    assert create.parameters["properties"]["agent"]["enum"] == ["researcher"]
    assert "- researcher: Digs up sources" in create.description
    assert "Looks things up" not in create.description  # description overrides toolDescription
    # The same prompt in another agent offers nothing: relationships belong to the side.
    await world.chat("go", agent_name="plain")
    assert [t.name for t in world.requests()[1].tools] == []


async def test_A4_side_b_relationship_lands_on_side_b(world: World, host: InlineHost) -> None:
    world.define(
        prompt("pa", model="ma"),
        prompt("pb", model="mb"),
        AgentDefinition.model_validate(
            {
                "name": "agent",
                "maxSessionTurns": 1,
                "sideA": {"prompt": "pa"},
                "sideB": {"prompt": "pb", "subagents": [{"agent": "helper"}]},
            }
        ),
        prompt("helper_prompt", model="mc"),
        AgentDefinition.model_validate(
            {
                "name": "helper",
                "exposeAsTool": True,
                "toolDescription": "Helps",
                "sideA": {"prompt": "helper_prompt"},
            }
        ),
    )
    world.script("ma", TestScript().add_text("A speaks").add_text("A again").add_text("A more"))
    world.script(
        "mb",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "H", "message": "go"})
        .add_text("B waits")
        .add_text("B read it")
        .add_text("B more"),
    )
    world.script("mc", TestScript().add_text("helped"))
    thread, _ = await world.chat("start")
    await host.idle()
    assert "subagent_create" not in {t.name for t in world.requests("ma")[0].tools}
    assert "subagent_create" in {t.name for t in world.requests("mb")[0].tools}
    [child] = await world.store.list_children(thread.id)
    [delivery] = [m for m in await world.messages(thread.id) if m.silent]
    assert delivery.role == "assistant"  # side B's perspective: the child speaks as its peer
    assert delivery.metadata["subagent_id"] == child.id


async def test_A5_blocking_defaults_to_false_and_as_names_the_relationship(
    world: World, host: InlineHost
) -> None:
    _family(world, {"agent": "helper", "as": "researcher"}, TestScript().add_text("found it"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "researcher", "name": "R1", "message": "Find"})
        .add_text("asked")
        .add_text("it found it"),
    )
    thread, _ = await world.chat("go")
    [row] = await _tool_rows(world, thread.id)
    child_id = row.subagent_id
    assert row.content == f"The subagent was initiated successfully. Reference: {child_id}"
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert (child.id, child.agent_name, child.relationship, child.display_name) == (
        child_id,
        "helper",
        "researcher",
        "R1",
    )
    assert child.child_status == "idle"
    [delivery] = [m for m in await world.messages(thread.id) if m.silent]
    assert delivery.role == "user"
    assert delivery.content == (
        f"Subagent (reference: {child_id}) has returned the following result:\n\nfound it"
    )


async def test_A5_blocking_true_waits_for_the_answer(world: World, host: InlineHost) -> None:
    _family(world, {"agent": "helper", "blocking": True}, TestScript().add_text("42"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "C", "message": "Count"})
        .add_text("done"),
    )
    thread, _ = await world.chat("go")
    [row] = await _tool_rows(world, thread.id)
    assert row.content == f"42\n\nReference: {row.subagent_id}"


async def test_A5_max_instances_at_the_top_level(world: World, host: InlineHost) -> None:
    _family(
        world,
        {"agent": "helper", "as": "researcher", "maxInstances": 1},
        TestScript().add_text("one").add_text("two"),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "researcher", "name": "A", "message": "1"})
        .add_tool_call("subagent_create", {"agent": "researcher", "name": "B", "message": "2"})
        .add_text("ok")
        .add_text("ok"),
    )
    thread, _ = await world.chat("go")
    first, second = await _tool_rows(world, thread.id)
    assert first.tool_status == "success"
    assert second.tool_status == "error"
    assert "Subagent instance limit reached for researcher (maxInstances: 1, active: 1)" in (
        second.content or ""
    )
    await host.idle()


async def test_A5_a_failed_child_settles_idle_and_stays_addressable(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        {"agent": "helper"},
        TestScript()
        .add_error("upstream broke", code="invalid_request", status=400)
        .add_text("second try worked"),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "H", "message": "Try"})
        .add_text("waiting")
        .add_text("it failed")
        .add_tool_call("subagent_message", {"referenceId": "H", "message": "Again"})
        .add_text("asked again")
        .add_text("it worked"),
    )
    thread, _ = await world.chat("go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert child.child_status == "idle" and not child.terminated  # a failure ends no thread
    [failure] = [m for m in await world.messages(thread.id) if m.silent]
    assert failure.content.startswith(f"Subagent (reference: {child.id}) has reported a failure")
    await world.run(thread.id, "try it again")
    await host.idle()
    rows = await _tool_rows(world, thread.id)
    assert rows[-1].content == f"Message sent to subagent {child.id}."
    [child] = await world.store.list_children(thread.id)
    assert child.child_status == "idle"
    assert [m.content for m in await world.messages(child.id)][-1] == "second try worked"


async def test_A4_hidden_relationship_is_not_offered_to_create_but_starts_immediately(
    world: World, host: InlineHost
) -> None:
    _family(
        world,
        {"agent": "helper", "as": "watcher", "hidden": True, "immediate": True},
        TestScript().add_text("watching"),
    )
    world.script("m", TestScript().add_text("hello").add_text("noted"))
    thread = await world.thread()
    await world.run(thread.id)  # a flow on the empty thread starts immediate children
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    assert (child.relationship, child.child_status) == ("watcher", "idle")
    offered = {t.name for t in world.requests()[0].tools}
    assert "subagent_create" not in offered and "subagents" in offered


async def test_A4_optional_relationship_exists_only_when_its_env_is_true(
    world: World, host: InlineHost
) -> None:
    _family(world, {"agent": "helper", "optional": "USE_HELPER"}, TestScript())
    world.script("m", TestScript().add_text("off").add_text("on"))
    await world.run((await world.thread()).id, "go")
    await world.run((await world.thread(env={"USE_HELPER": "yes"})).id, "go")
    assert [t.name for t in world.requests()[0].tools] == []
    assert "subagent_create" in {t.name for t in world.requests()[1].tools}


async def test_A4_scoped_env_and_explicit_parent_communication(
    world: World, host: InlineHost
) -> None:
    relationship = {"agent": "helper", "scopedEnv": ["REGION"], "parentCommunication": "explicit"}
    _family(world, relationship, TestScript().add_text("done quietly"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("subagent_create", {"agent": "helper", "name": "Q", "message": "go"})
        .add_text("started"),
    )
    thread = await world.thread(env={"REGION": "eu-west"})
    await world.run(thread.id, "go")
    await host.idle()
    [child] = await world.store.list_children(thread.id)
    found = await world.store.resolve_env(child.id, "REGION", "helper_prompt")
    assert found is not None and found.value == "eu-west"  # copied into the child
    assert child.child_status == "idle"
    assert not [m for m in await world.messages(thread.id) if m.silent]  # explicit: no delivery
