"""The link a subagent child keeps (``ThreadRecord.subagent``, the Django store's
``subagent_config``) is stored with exactly the keys each kind of relationship wrote when
links were hand-built dicts: the typed ``SubagentLink`` changes no stored row."""

from __future__ import annotations

import pytest

from runtime.core.spec import ResumableConfig, ToolConfig
from runtime.delegation.inline_host import InlineHost
from runtime.engine import Engine
from runtime.providers.test_provider import TestScript
from tests.runtime.conftest import World
from tests.runtime.delegation.test_spec_subagents import _family


@pytest.fixture
def host(world: World) -> InlineHost:
    """The world's engine with an ``InlineHost``: background children run as tasks."""
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


async def _only_child_link(world: World, thread_id: str) -> dict[str, object] | None:
    [child] = await world.store.list_children(thread_id)
    return child.subagent


@pytest.mark.parametrize(
    ("entry", "link"),
    [
        (
            ToolConfig(name="helper", blocking=True, hidden=True),
            {"blocking": True, "resumable": False, "tool_call_id": "c1", "hidden": True}
            | {"arguments": {"note": "n"}},
        ),
        (
            ToolConfig(name="helper", blocking=False, parent_communication="explicit"),
            {
                "blocking": False,
                "resumable": False,
                "owner_side": "a",
                "tool_call_id": "c1",
                "parent_communication": "explicit",
                "arguments": {"note": "n"},
            },
        ),
    ],
    ids=["agent-tool", "non-blocking"],
)
async def test_a_called_child_stores_the_link_of_its_kind(
    world: World, host: InlineHost, entry: ToolConfig, link: dict[str, object]
) -> None:
    _family(world, entry, TestScript().add_text("ok"))
    world.script(
        "m",
        TestScript()
        .add_tool_call("helper", {"message": "Count", "note": "n"}, id="c1")
        .add_text("done"),
    )
    thread, _ = await world.chat("go")
    await host.idle()
    assert await _only_child_link(world, thread.id) == link


async def test_a_resumable_child_stores_its_link(world: World, host: InlineHost) -> None:
    entry = ToolConfig(
        name="helper", blocking=True, resumable=ResumableConfig(receives_messages="side_b")
    )
    _family(world, entry, TestScript().add_text("first answer"))
    world.script(
        "m",
        TestScript()
        .add_tool_call(
            "subagent_create", {"agent": "helper", "name": "Researcher", "message": "Q1"}, id="c1"
        )
        .add_text("created"),
    )
    thread, _ = await world.chat("go")
    assert await _only_child_link(world, thread.id) == {
        "blocking": True,
        "resumable": True,
        "receives_messages": "side_b",
        "owner_side": "a",
        "tool_call_id": "c1",
        "arguments": {},
    }


async def test_an_immediate_child_stores_its_link(world: World, host: InlineHost) -> None:
    entry = ToolConfig(name="helper", blocking=False, immediate=True)
    _family(world, entry, TestScript().add_text("ready"))
    world.script("m", TestScript().add_text("hello"))
    thread = await world.thread()
    await world.run(thread.id)
    await host.idle()
    assert await _only_child_link(world, thread.id) == {
        "blocking": False,
        "resumable": False,
        "receives_messages": "side_a",
        "owner_side": "a",
        "tool_call_id": None,
        "immediate": True,
    }
