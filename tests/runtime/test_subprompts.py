"""Prompts as tools (sub-prompts): one step one level deeper, results shaped by include flags."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import ToolConfig
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["query"],
}


@define_tool("Search the web")
async def web(state: Any) -> str:
    return "3 results"


@define_tool("Always fails")
async def flaky(state: Any) -> str:
    raise RuntimeError("quota exceeded")


def _world(
    world: World, sub_script: TestScript, entry: ToolConfig | None = None, **sub: Any
) -> None:
    world.register(web, flaky)
    sub.setdefault("tools", ["web", "flaky"])
    world.define(
        prompt("main", tools=[entry or "research"]),
        agent("agent", "main"),
        prompt(
            "research", model="mr", text="You research.", tool_description="Research a topic", **sub
        ),
    )
    world.script("mr", sub_script)


def _parent_script(args: dict[str, Any]) -> TestScript:
    return TestScript().add_tool_call("research", args, id="call-r").add_text("Parent is done")


async def test_subprompt_runs_one_level_deeper_with_parent_id(world: World) -> None:
    _world(world, TestScript().add_text("Found: tea is good"), required_schema=SCHEMA)
    world.script("m", _parent_script({"query": "tea"}))
    thread, result = await world.chat("research tea")
    everything = await world.messages(thread.id)
    tool_row = next(m for m in everything if m.role == "tool" and m.depth == 0)
    deeper = [m for m in everything if m.depth == 1]
    assert [(m.role, m.content) for m in deeper] == [
        ("user", '{"query": "tea"}'),
        ("assistant", "Found: tea is good"),
    ]
    assert all(m.parent_id == tool_row.id for m in deeper)
    assert tool_row.content == "Found: tea is good" and tool_row.status == "completed"
    assert result.final_text == "Parent is done"
    # Sub-prompt messages never reach the parent's model context.
    assert all(
        "Found" not in (m.get("content") or "") or m["role"] == "tool"
        for m in world.requests()[1].messages
    )


async def test_subprompt_is_offered_with_its_required_schema(world: World) -> None:
    _world(world, TestScript(), required_schema=SCHEMA)
    world.script("m", TestScript().add_text("no tools"))
    await world.chat("hi")
    offered = {t.name: t for t in world.requests()[0].tools}
    assert offered["research"].description == "Research a topic"
    assert offered["research"].parameters == SCHEMA


async def test_subprompt_arguments_are_validated_against_required_schema(world: World) -> None:
    _world(world, TestScript().add_text("unused"), required_schema=SCHEMA)
    world.script("m", _parent_script({"limit": 3}))
    thread, _ = await world.chat("x")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool")
    assert tool_row.tool_status == "error"
    assert "Prompt tool argument validation failed" in (tool_row.content or "")
    assert "'query' is a required property" in (tool_row.content or "")
    assert world.requests("mr") == []


async def test_subprompt_init_user_message_property(world: World) -> None:
    entry = ToolConfig(name="research", init_user_message_property="query")
    _world(world, TestScript().add_text("ok"), entry, required_schema=SCHEMA, include_chat=False)
    world.script("m", _parent_script({"query": "green tea", "limit": 2}))
    await world.chat("x")
    assert world.requests("mr")[0].messages == [{"role": "user", "content": "green tea"}]


async def test_subprompt_sees_parent_chat_only_with_include_chat(world: World) -> None:
    entry = ToolConfig(name="research", init_user_message_property="query")
    _world(world, TestScript().add_text("ok"), entry, include_chat=True)
    world.script("m", _parent_script({"query": "q"}))
    await world.chat("the parent's question")
    sent = world.requests("mr")[0].messages
    # The parent's chat, minus the call in flight (its result does not exist yet), then the input.
    assert sent == [
        {"role": "user", "content": "the parent's question"},
        {"role": "user", "content": "q"},
    ]


async def test_subprompt_without_include_chat_sees_only_its_input(world: World) -> None:
    entry = ToolConfig(name="research", init_user_message_property="query")
    _world(world, TestScript().add_text("ok"), entry, include_chat=False)
    world.script("m", _parent_script({"query": "q"}))
    await world.chat("the parent's question")
    assert world.requests("mr")[0].messages == [{"role": "user", "content": "q"}]


async def test_subprompt_tool_calls_run_at_its_depth(world: World) -> None:
    _world(world, TestScript().add_tool_call("web", id="w1", content="Searching"))
    world.script("m", _parent_script({"query": "q"}))
    thread, _ = await world.chat("x")
    deep_tool = next(
        m for m in await world.messages(thread.id) if m.role == "tool" and m.depth == 1
    )
    assert (deep_tool.name, deep_tool.content) == ("web", "3 results")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, "Searching\n\nTool Executions:\nTool Call: web({})\nTool Response: 3 results"),
        (
            {"include_text_response": False},
            "Tool Executions:\nTool Call: web({})\nTool Response: 3 results",
        ),
        ({"include_tool_calls": False}, "Searching"),
        (
            {"include_text_response": False, "include_tool_calls": False},
            "Prompt executed successfully",
        ),
    ],
)
async def test_subprompt_include_text_and_tool_calls_flags(
    world: World, flags: dict[str, bool], expected: str
) -> None:
    entry = ToolConfig(name="research", **flags)
    _world(world, TestScript().add_tool_call("web", content="Searching"), entry)
    world.script("m", _parent_script({"query": "q"}))
    thread, _ = await world.chat("x")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool" and m.depth == 0)
    assert tool_row.content == expected


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, "Sub-prompt failed with 1 error(s):\nflaky: quota exceeded\nOther tools run: web"),
        ({"include_errors": False}, "Sub-prompt failed with 1 error(s):\nOther tools run: web"),
        (
            {"include_tool_calls": False},
            "Sub-prompt failed with 1 error(s):\nflaky: quota exceeded",
        ),
    ],
)
async def test_subprompt_include_errors_flag(
    world: World, flags: dict[str, bool], expected: str
) -> None:
    entry = ToolConfig(name="research", **flags)
    script = TestScript().add_tool_calls([{"name": "web"}, {"name": "flaky"}])
    _world(world, script, entry)
    world.script("m", _parent_script({"query": "q"}))
    thread, _ = await world.chat("x")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool" and m.depth == 0)
    assert tool_row.tool_status == "error"
    assert tool_row.content == "Failed to execute tool: " + expected


async def test_subprompt_provider_failure_is_an_error_result(world: World) -> None:
    # Overloaded twice: the ladder retries once, then gives up.
    _world(
        world,
        TestScript()
        .add_error("model overloaded", "overloaded", 529)
        .add_error("model overloaded", "overloaded", 529),
    )
    world.script("m", _parent_script({"query": "q"}))
    thread, result = await world.chat("x")
    tool_row = next(m for m in await world.messages(thread.id) if m.role == "tool" and m.depth == 0)
    assert tool_row.tool_status == "error" and "model overloaded" in (tool_row.content or "")
    assert result.stop_reason == "stop_on_response"


async def test_subprompt_logs_point_at_the_parent_log(world: World) -> None:
    _world(world, TestScript().add_text("ok"))
    world.script("m", _parent_script({"query": "q"}))
    thread, _ = await world.chat("x")
    logs = await world.store.list_logs(
        thread.id,
        __import__("runtime.store.protocol").store.protocol.LogQuery(limit=None, kind="llm"),
    )
    parent, child = logs[0], logs[1]
    assert (parent.model, child.model) == ("m", "mr")
    assert child.parent_id == parent.id and parent.parent_id is None


async def test_parallel_subprompts_on_one_model_get_distinct_scripted_responses(
    world: World,
) -> None:
    world.register(web, flaky)
    entry = ToolConfig(
        name="research", init_user_message_property="query", include_tool_calls=False
    )
    world.define(
        prompt("main", tools=[entry], parallel_tool_calls=True),
        agent("agent", "main"),
        prompt("research", text="You research.", include_chat=False),
    )
    world.script(
        "m",
        TestScript()
        .add_tool_calls(
            [
                {"name": "research", "arguments": {"query": "one"}, "id": "r1"},
                {"name": "research", "arguments": {"query": "two"}, "id": "r2"},
            ]
        )
        .add_text("answer A")
        .add_text("answer B")
        .add_text("both done"),
    )
    thread, result = await world.chat("x")
    rows = [m for m in await world.messages(thread.id) if m.role == "tool" and m.depth == 0]
    assert sorted(r.content or "" for r in rows) == ["answer A", "answer B"]
    assert result.final_text == "both done"
    assert sorted(r.sequence for r in world.requests()) == [0, 1, 2, 3]
