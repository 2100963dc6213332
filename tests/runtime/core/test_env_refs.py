"""``${NAME}`` in a prompt tool entry's ``env`` is env value ``NAME`` from the store (issue #36
item 11): a credential stays in the env store, typed secret, and the entry holds only its
name. What the tool sees is the value, typed as the value it references."""

from __future__ import annotations

import pytest

from runtime.core.env_refs import literal_credential
from runtime.core.spec import ToolConfig
from runtime.providers.test_provider import TestScript
from runtime.state import ThreadState
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


async def test_a_reference_in_tool_env_reaches_the_call_as_the_stored_value(world: World) -> None:
    seen: list[tuple[str, str]] = []

    async def charge(state: ThreadState) -> str:
        for name in ("STRIPE_SECRET_KEY", "ENDPOINT"):
            seen.append((await state.env(name), await state.env_type(name)))
        return "charged"

    world.register(define_tool("Charge", charge, name="charge"))
    entry = ToolConfig(
        name="charge",
        env={"STRIPE_SECRET_KEY": "${STRIPE_LIVE}", "ENDPOINT": "https://${REGION}.example/v1"},
    )
    world.define(prompt("main", tools=[entry]), agent("agent", "main"))
    world.harness.set_instance_env("STRIPE_LIVE", "sk_live_stored_in_env", "secret")
    world.harness.set_instance_env("REGION", "eu", "text")
    world.script("m", TestScript().add_tool_call("charge", {}).add_text("done"))
    thread = await world.thread()
    await world.run(thread.id, "go")
    assert seen == [
        ("sk_live_stored_in_env", "secret"),
        ("https://eu.example/v1", "text"),
    ]


async def test_a_reference_to_a_missing_value_names_it(world: World) -> None:
    errors: list[str] = []

    async def charge(state: ThreadState) -> str:
        try:
            await state.env("STRIPE_SECRET_KEY")
        except KeyError as exc:
            errors.append(str(exc))
        return "no key"

    world.register(define_tool("Charge", charge, name="charge"))
    entry = ToolConfig(name="charge", env={"STRIPE_SECRET_KEY": "${STRIPE_LIVE}"})
    world.define(prompt("main", tools=[entry]), agent("agent", "main"))
    world.script("m", TestScript().add_tool_call("charge", {}).add_text("done"))
    thread = await world.thread()
    await world.run(thread.id, "go")
    assert len(errors) == 1 and "STRIPE_LIVE" in errors[0] and "STRIPE_SECRET_KEY" in errors[0]


async def test_a_subagent_child_gets_the_referenced_value_not_the_reference(
    world: World,
) -> None:
    from runtime.delegation.inline_host import InlineHost
    from runtime.engine import Engine
    from tests.runtime.test_spec_session_tools import _family

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
    got: list[str] = []

    async def read_key(state: ThreadState) -> str:
        got.append(await state.env("STRIPE_SECRET_KEY"))
        return "read"

    world.register(define_tool("Read env", read_key, name="read_key"))
    entry = ToolConfig(name="helper", blocking=True, env={"STRIPE_SECRET_KEY": "${STRIPE_LIVE}"})
    _family(
        world,
        entry,
        TestScript().add_tool_call("read_key", {}).add_text("done"),
        child_tools=["read_key"],
    )
    world.harness.set_instance_env("STRIPE_LIVE", "sk_live_stored_in_env", "secret")
    world.script("m", TestScript().add_tool_call("helper", {"message": "go"}).add_text("ok"))
    thread = await world.thread()
    await world.run(thread.id, "go")
    assert got == ["sk_live_stored_in_env"]


@pytest.mark.parametrize(
    ("name", "value", "literal"),
    [
        ("STRIPE_SECRET_KEY", "sk_live_abc", True),
        ("Authorization", "Bearer abc", True),
        ("GITHUB_TOKEN", "${GITHUB_TOKEN}", False),
        ("Authorization", "Bearer ${TOKEN}", False),
        ("REGION", "eu", False),
        ("API_KEY", "", False),
    ],
)
def test_literal_credential_detector(name: str, value: str, literal: bool) -> None:
    assert literal_credential(name, value) is literal
