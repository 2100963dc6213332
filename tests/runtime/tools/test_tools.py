"""Tool execution: errors the model sees, repeated errors, attachments, parallel calls, ids."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from pydantic import BaseModel, Field

from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


class OrderArgs(BaseModel):
    order_id: str = Field(description="The order number")
    quantity: int = 1


@define_tool("Look up an order", OrderArgs)
async def lookup(state: Any, args: OrderArgs) -> dict[str, Any]:
    return {"order": args.order_id, "quantity": args.quantity}


def _world(world: World, script: TestScript, *tools: Any, **options: Any) -> None:
    world.register(*tools)
    world.define(prompt(tools=[t.name for t in tools], **options), agent())
    world.script("m", script)


async def _tool_rows(world: World, thread_id: str) -> list[Any]:
    return [m for m in await world.messages(thread_id) if m.role == "tool"]


async def test_tool_schema_from_the_args_model_is_sent_to_the_llm(world: World) -> None:
    _world(world, TestScript().add_text("hi"), lookup)
    await world.chat("x")
    schema = world.requests()[0].tools[0].parameters
    assert schema["properties"]["order_id"]["description"] == "The order number"
    assert schema["required"] == ["order_id"] and schema["additionalProperties"] is False


async def test_tool_result_is_stored_and_the_model_sees_it(world: World) -> None:
    _world(world, TestScript().add_tool_call("lookup", {"order_id": "A-1"}).add_text("ok"), lookup)
    thread, _ = await world.chat("x")
    row = (await _tool_rows(world, thread.id))[0]
    assert row.tool_status == "success" and '"order": "A-1"' in (row.content or "")
    assert world.requests()[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": row.tool_call_id,
        "name": "lookup",
        "content": row.content,
    }


async def test_argument_validation_error_becomes_an_error_result_and_session_goes_on(
    world: World,
) -> None:
    script = TestScript().add_tool_call("lookup", {"quantity": "many"}).add_text("Sorry")
    _world(world, script, lookup)
    thread, result = await world.chat("x")
    row = (await _tool_rows(world, thread.id))[0]
    assert row.tool_status == "error"
    assert row.content is not None and row.content.startswith(
        "Failed to execute tool: Tool argument validation failed:"
    )
    assert "[order_id] Field required" in row.content and "[quantity]" in row.content
    assert result.stop_reason == "stop_on_response" and len(world.requests()) == 2


async def test_tool_exception_becomes_an_error_result(world: World) -> None:
    @define_tool("Explodes")
    async def explode(state: Any) -> str:
        raise ValueError("the widget is missing")

    _world(world, TestScript().add_tool_call("explode").add_text("I could not"), explode)
    thread, result = await world.chat("x")
    row = (await _tool_rows(world, thread.id))[0]
    assert (row.tool_status, row.content) == (
        "error",
        "Failed to execute tool: the widget is missing",
    )
    assert world.requests()[1].messages[-1]["content"] == row.content
    assert result.final_text == "I could not"


async def test_unknown_tool_and_bad_json_are_error_results(world: World) -> None:
    script = TestScript().add_tool_calls(
        [{"name": "nope", "arguments": {}}, {"name": "lookup", "arguments": "{not json"}]
    )
    _world(world, script.add_text("done"), lookup)
    thread, _ = await world.chat("x")
    contents = [r.content for r in await _tool_rows(world, thread.id)]
    assert contents[0] == "Failed to execute tool: Tool 'nope' is not available for this prompt."
    assert contents[1] is not None and "not valid JSON" in contents[1]


async def test_repeated_identical_tool_errors_stop_after_eight(world: World) -> None:
    attempts = {"n": 0}

    @define_tool("Flaky database")
    async def db(state: Any) -> str:
        attempts["n"] += 1
        raise RuntimeError(
            f"connection to '/var/run/db{attempts['n']}.sock' refused after {attempts['n']} tries"
        )

    script = TestScript()
    for _ in range(12):
        script.add_tool_call("db")
    _world(world, script, db)
    thread, result = await world.chat("x")
    assert result.stop_reason == "repeated_tool_error"
    assert attempts["n"] == 8 and len(world.requests()) == 8
    last = (await world.messages(thread.id))[-1]
    assert last.role == "assistant" and "same tool error" in (last.content or "")


async def test_different_errors_do_not_count_as_repeated(world: World) -> None:
    attempts = {"n": 0}

    @define_tool("Varying errors")
    async def vary(state: Any) -> str:
        attempts["n"] += 1
        raise RuntimeError("timeout" if attempts["n"] % 2 else "forbidden")

    script = TestScript()
    for _ in range(9):
        script.add_tool_call("vary")
    _world(world, script.add_text("giving up"), vary)
    _, result = await world.chat("x")
    assert result.stop_reason == "stop_on_response" and attempts["n"] == 9


async def test_tool_receives_its_tool_call_id(world: World) -> None:
    seen: list[str | None] = []

    @define_tool("Charge a card, once")
    async def charge(state: Any) -> str:
        seen.append(state.execution.tool_call_id)
        return "charged"

    script = TestScript().add_tool_calls(
        [{"name": "charge", "id": "c-1"}, {"name": "charge", "id": "c-2"}]
    )
    _world(world, script.add_text("ok"), charge)
    await world.chat("x")
    assert seen == ["c-1", "c-2"]


async def test_parallel_tool_calls_run_concurrently_and_are_stored_in_call_order(
    world: World,
) -> None:
    started: list[str] = []
    release = asyncio.Event()

    class Args(BaseModel):
        label: str

    @define_tool("Slow", Args)
    async def slow(state: Any, args: Args) -> str:
        started.append(args.label)
        if len(started) == 3:
            release.set()
        await asyncio.wait_for(release.wait(), timeout=5)  # deadlocks unless all run at once
        return f"done {args.label}"

    calls = [{"name": "slow", "arguments": {"label": x}, "id": f"id-{x}"} for x in "abc"]
    _world(
        world,
        TestScript().add_tool_calls(calls).add_text("all done"),
        slow,
        parallel_tool_calls=True,
    )
    thread, result = await world.chat("x")
    rows = await _tool_rows(world, thread.id)
    assert [r.tool_call_id for r in rows] == ["id-a", "id-b", "id-c"]
    assert [r.content for r in rows] == ["done a", "done b", "done c"]
    assert [r.created_at for r in rows] == sorted(r.created_at for r in rows)
    assert result.final_text == "all done"
    assert world.requests()[0].parallel_tool_calls is True


async def test_sequential_tool_calls_run_one_after_another(world: World) -> None:
    order: list[str] = []

    class Args(BaseModel):
        label: str

    @define_tool("Step", Args)
    async def step(state: Any, args: Args) -> str:
        order.append(f"start {args.label}")
        await asyncio.sleep(0)
        order.append(f"end {args.label}")
        return args.label

    calls = [{"name": "step", "arguments": {"label": x}} for x in "ab"]
    _world(world, TestScript().add_tool_calls(calls).add_text("ok"), step)
    await world.chat("x")
    assert order == ["start a", "end a", "start b", "end b"]


async def test_tool_attachments_are_stored_under_attachments(world: World) -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()

    @define_tool("Draw a chart")
    async def chart(state: Any) -> dict[str, Any]:
        return {
            "status": "success",
            "result": "Here is the chart",
            "attachments": [
                {"name": "chart.png", "mimeType": "image/png", "data": png, "width": 4, "height": 3}
            ],
        }

    _world(world, TestScript().add_tool_call("chart").add_text("see chart"), chart)
    thread, _ = await world.chat("x")
    row = (await _tool_rows(world, thread.id))[0]
    assert row.attachments is not None and len(row.attachments) == 1
    ref = row.attachments[0]
    assert ref["path"].startswith("/attachments/") and ref["path"].endswith(".png")
    assert (ref["name"], ref["mimeType"], ref["size"], ref["width"]) == (
        "chart.png",
        "image/png",
        9,
        4,
    )
    assert await world.store.read_file(thread.id, ref["path"]) == b"\x89PNG fake"
    assert row.content == f'Here is the chart\nAttachment path for "chart.png": {ref["path"]}'
    assert world.sink.events(thread.id, "file_created")[0]["data"]["path"] == ref["path"]


async def test_mcp_style_content_and_plain_values_are_normalized(world: World) -> None:
    @define_tool("MCP-ish")
    async def mcp(state: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}]}

    @define_tool("Returns nothing")
    async def quiet(state: Any) -> None:
        return None

    _world(
        world,
        TestScript().add_tool_calls([{"name": "mcp"}, {"name": "quiet"}]).add_text("ok"),
        mcp,
        quiet,
    )
    thread, _ = await world.chat("x")
    assert [r.content for r in await _tool_rows(world, thread.id)] == [
        "line 1\nline 2",
        "Tool executed successfully",
    ]


async def test_empty_model_response_gets_an_error_tool_result(world: World) -> None:
    _world(world, TestScript().add_text("").add_text("Sorry, here is my answer"))
    thread, result = await world.chat("x")
    rows = await world.messages(thread.id)
    assert (
        rows[1].tool_calls is not None
        and rows[1].tool_calls[0]["function"]["name"] == "invalid_assistant_response"
    )
    assert rows[2].tool_status == "error" and "empty" in (rows[2].content or "")
    assert result.final_text == "Sorry, here is my answer"


async def test_queue_tool_runs_after_the_models_calls_in_the_same_step(world: World) -> None:
    @define_tool("Plan")
    async def plan(state: Any) -> str:
        state.queue_tool("follow_up", {})
        return "planned"

    @define_tool("Follow up")
    async def follow_up(state: Any) -> str:
        return "followed up"

    _world(world, TestScript().add_tool_call("plan").add_text("ok"), plan, follow_up)
    thread, _ = await world.chat("x")
    rows = await world.messages(thread.id)
    assert [r.content for r in rows if r.role == "tool"] == ["planned", "followed up"]
    calls = rows[1].tool_calls or []
    assert [c["function"]["name"] for c in calls] == ["plan", "follow_up"]
    # The queued call and its result pair up in the next request.
    assert [m["role"] for m in world.requests()[1].messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
    ]


async def test_invoke_tool_runs_a_tool_without_storing_a_message(world: World) -> None:
    @define_tool("Inner")
    async def inner(state: Any) -> str:
        return "inner result"

    @define_tool("Outer")
    async def outer(state: Any) -> str:
        result = await state.invoke_tool("inner", {})
        return f"outer saw: {result.result}"

    _world(world, TestScript().add_tool_call("outer").add_text("ok"), outer, inner)
    thread, _ = await world.chat("x")
    assert [r.content for r in await _tool_rows(world, thread.id)] == ["outer saw: inner result"]


async def test_invoke_tool_at_rest(world: World) -> None:
    world.register(lookup)
    world.define(prompt(), agent())
    world.script("m", TestScript())
    thread = await world.thread()
    state = await world.engine.thread_state(thread.id)
    assert state.execution is None
    result = await state.invoke_tool("lookup", {"order_id": "B-2"})
    assert result.ok and '"order": "B-2"' in (result.result or "")
    assert await world.messages(thread.id) == []


async def test_tool_logs_are_written_per_call(world: World) -> None:
    from runtime.store.protocol import LogQuery

    _world(world, TestScript().add_tool_call("lookup", {"order_id": "A"}).add_text("ok"), lookup)
    thread, _ = await world.chat("x")
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None))
    kinds = [(log.kind, log.tool_name or log.model) for log in logs]
    assert kinds == [("llm", "m"), ("tool", "lookup"), ("llm", "m")]
    tool_log = logs[1]
    assert tool_log.parent_id == logs[0].id and tool_log.is_complete
    assert tool_log.request_body == {"arguments": '{"order_id": "A"}'}
