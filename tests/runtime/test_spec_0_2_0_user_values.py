"""Issue #54, row E3 in the engine: ``state.get_user_value``/``set_user_value``/
``list_user_values`` act on the thread owner's account-wide values, shared by that owner's
threads and never seen from another owner's (the HTTP side:
tests/agents_app/api/test_spec_0_2_0_user_values.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


class RememberArgs(BaseModel):
    key: str
    value: Any = None


@define_tool("Remember something about the user", RememberArgs)
async def remember(state: Any, args: RememberArgs) -> str:
    await state.set_user_value(args.key, args.value)
    return "remembered"


@define_tool("Recall what is known about the user")
async def recall(state: Any) -> dict[str, Any]:
    page = await state.list_user_values("pref.")
    return {
        "one": await state.get_user_value("pref.tea"),
        "keys": [e.key for e in page.entries],
        "total": page.total,
    }


def _world(world: World) -> None:
    """``agent`` remembers three things; ``reader`` recalls (the scripts run per thread)."""
    world.register(remember, recall)
    world.define(
        prompt(tools=["remember"]),
        agent(),
        prompt("reading", model="r", tools=["recall"]),
        agent("reader", "reading"),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_call("remember", {"key": "pref.tea", "value": {"milk": True}})
        .add_tool_call("remember", {"key": "pref.music", "value": "jazz"})
        .add_tool_call("remember", {"key": "other", "value": 1})
        .add_text("noted"),
    )
    world.script("r", TestScript().add_tool_call("recall").add_text("recalled"))


async def _recalled(world: World, user_id: str | None) -> str:
    thread = await world.thread("reader", user_id=user_id)
    await world.run(thread.id, "what do you know?")
    return [m for m in await world.messages(thread.id) if m.role == "tool"][-1].content or ""


async def test_E3_user_values_follow_the_owner_across_threads_and_no_further(
    world: World,
) -> None:
    _world(world)
    first = await world.thread(user_id="alice")
    await world.run(first.id, "I like tea with milk and jazz")

    alice = await _recalled(world, "alice")
    bob = await _recalled(world, "bob")
    nobody = await _recalled(world, None)

    assert '"one": {\n    "milk": true\n  }' in alice
    assert '"keys": [\n    "pref.music",\n    "pref.tea"\n  ]' in alice and '"total": 2' in alice
    assert '"one": null' in bob and '"total": 0' in bob
    assert nobody == "Failed to execute tool: This thread has no owner, so it has no user values."
