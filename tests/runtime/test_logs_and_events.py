"""One log per LLM request (tokens, cost, latency) and the live frames in the reference shapes."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import ModelDefinition, ScriptedUsage
from runtime.providers.base import Usage
from runtime.providers.pricing import cost_of
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import LogQuery
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


@define_tool("Search")
async def search(state: Any) -> str:
    return "hit"


async def test_each_llm_request_has_a_log_with_tokens_and_cost(world: World) -> None:
    world.register(search)
    world.define(prompt(tools=["search"]), agent())
    world.script(
        "m",
        TestScript()
        .add_tool_call(
            "search",
            usage=ScriptedUsage(
                prompt_tokens=1000, completion_tokens=100, cached_tokens=400, reasoning_tokens=20
            ),
        )
        .add_text("done"),
    )
    world.define(
        ModelDefinition(
            name="m",
            provider="test",
            model="scripted-1",
            input_price=2.0,
            output_price=10.0,
            cached_price=0.5,
        )
    )
    thread, _ = await world.chat("hello there")
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert len(logs) == 2
    first = logs[0]
    assert (first.provider, first.model, first.model_id, first.prompt_name) == (
        "test",
        "m",
        "scripted-1",
        "main",
    )
    assert (
        first.input_tokens,
        first.cached_tokens,
        first.output_tokens,
        first.reasoning_tokens,
    ) == (1000, 400, 100, 20)
    assert first.total_tokens == 1100
    assert first.cost_input == pytest.approx(600 * 2.0 / 1e6)
    assert first.cost_cached == pytest.approx(400 * 0.5 / 1e6)
    assert first.cost_output == pytest.approx(100 * 10.0 / 1e6)
    assert first.cost_total == pytest.approx(
        first.cost_input + first.cost_cached + first.cost_output
    )
    assert first.is_complete and first.finish_reason == "tool_calls" and first.attempt == 1
    assert first.latency_ms is not None and first.time_to_first_token_ms is not None
    assert (
        first.request_body is not None
        and first.request_body["messages"][0]["content"] == "hello there"
    )
    assert (
        first.response_body is not None
        and first.response_body["tool_calls"][0]["function"]["name"] == "search"
    )
    assert first.system_prompt == "You are helpful." and first.message_id is not None
    messages = await world.messages(thread.id)
    assert messages[1].log_id == first.id and first.message_id == messages[0].id


async def test_usage_is_estimated_at_four_characters_per_token(world: World) -> None:
    world.define(prompt(text="12345678"), agent())
    world.script("m", TestScript().add_text("abcdefghi"))
    thread, _ = await world.chat("1234")
    log = (await world.store.list_logs(thread.id, LogQuery(kind="llm")))[0]
    assert (log.input_tokens, log.output_tokens) == (2 + 1, 3)


async def test_failed_request_is_logged_and_the_message_failed(world: World) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_error("Bad request", "invalid_request", 400))
    thread, result = await world.chat("hi")
    assert result.stop_reason == "step_error" and "Bad request" in (result.detail or "")
    [log] = await world.store.list_logs(thread.id, LogQuery(kind="llm"))
    assert (log.error, log.error_type, log.status_code, log.is_complete) == (
        "Bad request",
        "invalid_request",
        400,
        True,
    )
    reply = (await world.messages(thread.id))[-1]
    assert reply.status == "failed" and reply.log_id == log.id
    assert reply.metadata["error"]["code"] == "invalid_request"
    assert "All retry attempts exhausted for model m" in reply.metadata["error"]["message"]
    assert world.sleeps == []  # not retryable: no second attempt


def test_cost_uses_input_price_for_cached_tokens_without_a_cached_price() -> None:
    model = ModelDefinition(
        name="x", provider="test", model="x", input_price=3.0, output_price=15.0
    )
    cost = cost_of(
        model, Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_tokens=500_000)
    )
    assert (cost.input, cost.cached, cost.output, cost.total) == (1.5, 1.5, 15.0, 18.0)


async def test_message_lifecycle_frames(world: World) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_text("Hello there, friend").with_streaming(chunk_size=5))
    thread, _ = await world.chat("hi")
    frames = [
        f for f in world.sink.frames[thread.id] if f["type"] in ("message_data", "message_chunk")
    ]
    reply_id = (await world.messages(thread.id))[-1].id
    reply = [f for f in frames if f["message_id"] == reply_id]
    assert reply[0]["type"] == "message_data" and reply[0]["data"]["status"] == "pending"
    assert reply[0]["data"]["content"] is None and reply[0]["data"]["request_sent_at"] is not None
    chunks = [f["chunk"] for f in reply if f["type"] == "message_chunk"]
    assert chunks == ["Hello", " ther", "e, fr", "iend"]
    assert reply[-1]["type"] == "message_data" and reply[-1]["data"]["status"] == "completed"
    assert reply[-1]["data"]["content"] == "Hello there, friend" and reply[-1]["depth"] == 0
    assert isinstance(reply[-1]["data"]["attachments"], list)


async def test_reasoning_chunks_and_stored_reasoning(world: World) -> None:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_reasoning("Answer", "Let me think"))
    thread, _ = await world.chat("hi")
    assert [f["chunk"] for f in world.sink.of_type(thread.id, "reasoning_chunk")] == [
        "Let me think"
    ]
    assert (await world.messages(thread.id))[-1].reasoning_content == "Let me think"


async def test_telemetry_frames(world: World) -> None:
    world.register(search)
    world.define(prompt(tools=["search"]), agent())
    world.script("m", TestScript().add_tool_call("search").add_text("done"))
    thread, _ = await world.chat("hi")
    kinds = [
        f["type"]
        for f in world.sink.frames[thread.id]
        if f["type"] not in ("message_data", "message_chunk", "log_data", "event")
    ]
    assert kinds == [
        "step_started",
        "llm_request",
        "llm_response",
        "tool_started",
        "tool_completed",
        "step_completed",
        "step_started",
        "llm_request",
        "llm_response",
        "step_completed",
        "stopped",
    ]
    started = world.sink.of_type(thread.id, "step_started")[0]
    assert (started["step"], started["side"]) == (1, "a") and started["timestamp"] > 10**12
    assert world.sink.of_type(thread.id, "stopped")[0]["reason"] == "stop_on_response"
    assert world.sink.of_type(thread.id, "tool_completed")[0] == {
        "type": "tool_completed",
        "tool": "search",
        "status": "success",
        "timestamp": world.sink.of_type(thread.id, "tool_completed")[0]["timestamp"],
    }
    events = [(f["eventType"], f["data"]["name"]) for f in world.sink.of_type(thread.id, "event")]
    assert events == [("tool_call_started", "search"), ("tool_call_done", "search")]


async def test_frames_follow_the_write_they_describe(world: World) -> None:
    """Every message_data frame describes a row that is already stored, except a step's
    pending opening that rode with its response's commit: it was stored in a newer
    version, and the next frame of that row is the stored one."""
    world.register(search)
    world.define(prompt(tools=["search"]), agent())
    world.script("m", TestScript().add_tool_call("search").add_text("done"))
    store = world.store
    seen: list[tuple[str, str, str | None]] = []  # (id, frame status, stored status)
    original = world.sink.emit

    def emit(thread_id: str, frame: dict[str, Any]) -> None:
        if frame["type"] == "message_data":
            stored = store.all_messages(thread_id)  # type: ignore[attr-defined]
            row = next((m for m in stored if m.id == frame["message_id"]), None)
            seen.append((frame["message_id"], frame["data"]["status"], row and row.status))
        original(thread_id, frame)

    world.sink.emit = emit  # type: ignore[method-assign]
    await world.chat("hi")
    assert seen
    for i, (message_id, shown, stored) in enumerate(seen):
        if shown == stored:
            continue
        assert shown == "pending" and stored is not None  # superseded, never a phantom
        following = next(x for x in seen[i + 1 :] if x[0] == message_id)
        assert following[1] == following[2] == stored
