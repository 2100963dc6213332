"""A whole tool-loop session through the engine and each real adapter.

The engine runs as in production (store, tools, history) with the HTTP
adapters installed on its provider registry; the vendor is the replay server
answering with recorded streams: a tool call first, then the final text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core.messages import Message
from runtime.core.spec import ModelDefinition
from runtime.providers.registry import KEY_NAMES, install
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import LogQuery
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY


class MultiplyArgs(BaseModel):
    a: int
    b: int


@define_tool("Multiply two numbers.", MultiplyArgs)
async def multiply(state: Any, args: MultiplyArgs) -> str:
    return str(args.a * args.b)


@define_tool("Return the installed version of llm")
async def llm_version(state: Any) -> str:
    return "0.0+test"


@define_tool("Generate a pelican name")
async def pelican_name_generator(state: Any) -> str:
    return "Charles"


class CountryArgs(BaseModel):
    country: str


@define_tool("Get the capital of a country.", CountryArgs)
async def get_capital(state: Any, args: CountryArgs) -> str:
    return {"France": "Paris"}.get(args.country, "unknown")


class CityArgs(BaseModel):
    city: str


@define_tool("Get the temperature in a city.", CityArgs)
async def get_temperature(state: Any, args: CityArgs) -> str:
    return "30°C"


# vendor → (path prefix, model id, cassette, tools, tool calls the cassette makes)
CASES = {
    "openai": ("/v1", "gpt-4o-mini", "openai/chat_stream_tool_call_roundtrip.yaml", [multiply], 1),
    "openrouter": (
        "/api/v1",
        "openai/gpt-4.1-mini",
        "openrouter/chat_stream_tool_call_roundtrip.yaml",
        [llm_version],
        1,
    ),
    "anthropic": (
        "/v1",
        "claude-3-5-haiku-latest",
        "anthropic/messages_stream_parallel_tool_use.yaml",
        [pelican_name_generator],
        2,  # two parallel calls in one step
    ),
    "google": (
        "/v1beta",
        "gemini-2.0-flash",
        "gemini/stream_function_call_roundtrip.yaml",
        [get_capital, get_temperature],
        2,  # two sequential steps
    ),
}


@pytest.mark.parametrize("vendor", list(CASES))
async def test_tool_loop_session_through_the_adapter(world: World, replay, client, vendor):
    prefix, model_id, cassette, tools, call_count = CASES[vendor]
    interactions = recordings.cassette(cassette)
    replay.queue(*(i.reply() for i in interactions))
    install(world.providers, client, environ={KEY_NAMES[vendor]: PLANTED_KEY})
    world.register(*tools)
    world.define(
        ModelDefinition(name="m", provider=vendor, model=model_id, base_url=replay.url + prefix),  # type: ignore[arg-type]
        prompt(tools=[t.name for t in tools], text="You are a helpful chatbot."),
        agent(),
    )

    thread, result = await world.chat("Please use the tool.")

    assert result.stop_reason == "stop_on_response"
    rows = await world.messages(thread.id)
    calls = [c for m in rows if m.role == "assistant" for c in m.tool_calls or []]
    results = [m for m in rows if m.role == "tool"]
    assert len(calls) == len(results) == call_count
    assert all(r.tool_status == "success" for r in results)
    final = rows[-1]
    assert final.role == "assistant" and final.content and final.status == "completed"
    assert len(replay.requests) == len(interactions)
    # Every tool result went back to the vendor in the next request.
    last_body = json.dumps(replay.requests[-1].json(), ensure_ascii=False)
    for row in results:
        assert (row.content or "") in last_body
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert len(logs) == len(interactions) and all(log.is_complete for log in logs)
    assert sum(log.output_tokens or 0 for log in logs) > 0
    assert PLANTED_KEY not in json.dumps([log.request_body for log in logs], default=str)
    # Each log keeps the exact body that went on the wire, and what served it.
    for log, sent in zip(logs, replay.requests, strict=True):
        assert log.request_body is not None and log.request_body["body"] == sent.json()
        assert log.status_code == 200 and log.response_body and log.finish_reason
    # The same loop through the scripted ``test`` provider stores the same transcript shape.
    assert _shape(rows) == _shape(await _scripted_twin(world, rows, [t.name for t in tools]))


def _shape(rows: list[Message]) -> list[tuple[Any, ...]]:
    return [
        (m.role, [c["function"]["name"] for c in m.tool_calls or []], m.tool_status, m.status)
        for m in rows
    ]


async def _scripted_twin(world: World, rows: list[Message], tools: list[str]) -> list[Message]:
    """Replay the adapter session's tool calls and final text through the ``test`` provider."""
    script = TestScript()
    for m in rows:
        if m.role == "assistant" and m.tool_calls:
            calls = [
                {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
                for c in m.tool_calls
            ]
            script.add_tool_calls(calls, content=m.content)
    script.add_text(rows[-1].content or "")
    world.script("twin", script)
    world.define(
        prompt("twin_prompt", model="twin", tools=tools, text="You are a helpful chatbot."),
        agent("twin_agent", prompt="twin_prompt"),
    )
    thread, _ = await world.chat("Please use the tool.", "twin_agent")
    return await world.messages(thread.id)
