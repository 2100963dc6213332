"""Spec tool env declarations (``ToolVariables``/``ToolTenvs``, ``DefineToolOptions`` object form):
parsing and refusal at start-up, the walk over an agent's reachable tools, and a session whose
required value is missing failing before its first model request."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core.spec import PromptIncludePart, PromptTextPart, ToolConfig
from runtime.definitions.loader import DefinitionLoader
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import Registry, RegistryError, ToolDefinition, define_tool
from runtime.tools.tool_env import VariableDefinition, needed_env
from tests.runtime.conftest import World, agent, prompt


async def _charge(state: Any) -> str:
    return "charged"


def _billing_tool(**extra: Any) -> ToolDefinition:
    return define_tool(
        {
            "description": "Charge the card",
            "execute": _charge,
            "name": "charge",
            "variables": [
                {"name": "STRIPE_KEY", "type": "secret", "description": "Stripe API key"},
                {"name": "CURRENCY", "type": "text", "required": False},
            ],
            **extra,
        }
    )


# --- declarations -------------------------------------------------------------------------


def test_spec_define_tool_object_form_keeps_variable_declarations() -> None:
    tool = _billing_tool()
    assert tool.name == "charge" and tool.description == "Charge the card"
    assert tool.variables == (
        VariableDefinition("STRIPE_KEY", "secret", True, "Stripe API key"),
        VariableDefinition("CURRENCY", "text", False, ""),
    )


def test_spec_tenvs_raw_shape_fields_are_text_and_required_unless_optional() -> None:
    class Tenvs(BaseModel):
        REGION: str
        ZONE: str | None = None

    raw = define_tool("t", _charge, name="raw", tenvs={"A": str, "B": str | None})
    model = define_tool({"description": "t", "execute": _charge, "name": "m", "tenvs": Tenvs})
    assert [(v.name, v.type, v.required) for v in raw.variables] == [
        ("A", "text", True),
        ("B", "text", False),
    ]
    assert [(v.name, v.type, v.required) for v in model.variables] == [
        ("REGION", "text", True),
        ("ZONE", "text", False),
    ]


def test_spec_variable_type_defaults_to_secret() -> None:
    tool = define_tool("t", _charge, name="t", variables=[{"name": "TOKEN"}])
    assert tool.variables[0].type == "secret" and tool.variables[0].required


@pytest.mark.parametrize(
    ("variables", "tenvs", "says"),
    [
        ([{"name": "K", "type": "password"}], None, "type must be 'text' or 'secret'"),
        ([{"name": "1BAD"}], None, "env name '1BAD'"),
        ([{"name": "K", "required": "yes"}], None, "required must be true or false"),
        ([{"name": "K", "default": "x"}], None, "unknown keys ['default']"),
        ([{"name": "K"}, {"name": "K", "type": "text"}], None, "declared twice"),
        ([{"name": "K"}], {"K": str}, "declared twice"),
        ("K", None, "variables must be a list"),
        (None, {"K": int}, "the type must be str or str | None"),
        ([{"name": "K", "description": 3}], None, "description must be a string"),
    ],
)
def test_spec_invalid_env_declarations_are_refused_at_start_up(
    variables: Any, tenvs: Any, says: str
) -> None:
    with pytest.raises(RegistryError, match="define_tool") as raised:
        define_tool("t", _charge, name="bad", variables=variables, tenvs=tenvs)
    assert says in str(raised.value)


def test_spec_define_tool_options_refuse_unknown_keys_and_missing_execute() -> None:
    with pytest.raises(RegistryError, match=r"unknown options \['tenv'\]"):
        define_tool({"description": "t", "execute": _charge, "tenv": {}})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(RegistryError, match="execute function"):
        define_tool({"description": "t"})  # type: ignore[typeddict-item]


# --- the walk -------------------------------------------------------------------------------


def _weather_tool() -> ToolDefinition:
    return define_tool(
        "Weather",
        _charge,
        name="weather",
        variables=[{"name": "WEATHER_KEY", "scoped": True}],
    )


def _graph(world: World) -> None:
    """main → include(shared) → sub-prompt ``helper`` (charge) → agent ``child`` (weather,
    and ``agent`` again: a cycle). An optional-gated tool is not counted."""
    world.register(_billing_tool(), _weather_tool())
    world.script("m", TestScript().add_text("unused"))
    world.define(
        prompt("shared", text="shared", tools=["helper"]),
        prompt(
            "main",
            text=[PromptTextPart(content="hi"), PromptIncludePart(prompt="shared")],
            tools=["child", ToolConfig(name="weather", optional="USE_WEATHER")],
        ),
        prompt("helper", text="helper", tools=["charge"]),
        prompt("child_prompt", text="child", tools=["weather", "agent"]),
        agent(),
        agent("child", "child_prompt", expose_as_tool=True),
    )


async def test_spec_walk_finds_tools_through_includes_subprompts_agents_and_cycles(
    world: World,
) -> None:
    _graph(world)
    main = await DefinitionLoader(world.store).agent("agent")
    needs = await needed_env(DefinitionLoader(world.store), world.registry, main)
    found = sorted((n.variable.name, n.tool, n.prompt, n.via_agent) for n in needs)
    assert found == [
        ("CURRENCY", "charge", "helper", None),
        ("STRIPE_KEY", "charge", "helper", None),
        ("WEATHER_KEY", "weather", "child_prompt", "child"),
    ]


async def test_spec_walk_of_an_agent_with_no_tools_is_empty(world: World) -> None:
    world.define(prompt(), agent())
    needs = await needed_env(DefinitionLoader(world.store), Registry(), agent())
    assert needs == []


# --- failing fast ----------------------------------------------------------------------------


def _billing_world(world: World, *replies: str) -> None:
    world.register(_billing_tool())
    script = TestScript()
    for reply in replies or ("hello",):
        script.add_text(reply)
    world.script("m", script)
    world.define(prompt(tools=["charge"]), agent())


async def test_spec_session_with_missing_required_tool_env_fails_before_the_model(
    world: World,
) -> None:
    _billing_world(world)
    thread = await world.thread(user_id="alice")
    result = await world.run(thread.id, "pay")
    assert result.stop_reason == "step_error"
    assert result.detail is not None
    assert '"STRIPE_KEY"' in result.detail and 'tool "charge"' in result.detail
    assert "CURRENCY" not in result.detail  # optional values never block
    assert world.requests() == []
    said = [m.content for m in await world.messages(thread.id) if m.role == "assistant"]
    assert said and "STRIPE_KEY" in str(said[-1])


async def test_spec_required_tool_env_set_for_the_owner_lets_the_session_run(
    world: World,
) -> None:
    _billing_world(world)
    world.harness.set_user_env("alice", "STRIPE_KEY", "sk_planted_value")
    thread = await world.thread(user_id="alice")
    result = await world.run(thread.id, "pay")
    assert result.stop_reason == "stop_on_response" and result.final_text == "hello"
    assert len(world.requests()) == 1


async def test_spec_required_tool_env_resolves_through_thread_and_instance_tiers(
    world: World,
) -> None:
    _billing_world(world, "one", "two")
    on_thread = await world.thread(user_id="alice", env={"STRIPE_KEY": "t"})
    assert (await world.run(on_thread.id, "pay")).stop_reason == "stop_on_response"
    world.harness.set_instance_env("STRIPE_KEY", "i")
    other = await world.thread(user_id="bob")
    assert (await world.run(other.id, "pay")).stop_reason == "stop_on_response"


async def test_spec_prompt_tool_entry_env_satisfies_a_required_declaration(world: World) -> None:
    world.register(_billing_tool())
    world.script("m", TestScript().add_text("hello"))
    world.define(prompt(tools=[ToolConfig(name="charge", env={"STRIPE_KEY": "entry"})]), agent())
    thread = await world.thread(user_id="alice")
    assert (await world.run(thread.id, "pay")).stop_reason == "stop_on_response"
