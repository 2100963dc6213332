"""Provider-run tools through the engine: the prompt's ``provider:`` entry reaches the vendor
in native form, what the vendor ran lands on the assistant message, the log and the live
frames, the citations on the message, and the next turn sends the vendor's blocks back.
The vendor is the replay server on 127.0.0.1 serving the recordings."""

from __future__ import annotations

import json
from typing import Any

from runtime.core.messages import to_wire
from runtime.core.spec import ModelDefinition, ReasoningConfig, ToolConfig
from runtime.providers.registry import install
from runtime.store.protocol import LogQuery
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY


def _model(replay: Any, vendor: str, model_id: str, prefix: str) -> ModelDefinition:
    return ModelDefinition(
        name="m",
        provider=vendor,  # type: ignore[arg-type]
        model=model_id,
        base_url=replay.url + prefix,
    )


async def test_spec_provider_executed_tools_are_recorded_and_never_executed_locally(
    world: World, replay, client
):
    first, second = recordings.cassette("anthropic/messages_nonstream_web_search.yaml")
    replay.queue(first.reply(), second.reply())
    install(world.providers, client, environ={"ANTHROPIC_API_KEY": PLANTED_KEY}, stream=False)
    world.define(
        _model(replay, "anthropic", "claude-sonnet-4-0", "/v1"),
        prompt(
            tools=[ToolConfig(name="provider:web_search", options={"max_uses": 2})],
            reasoning=ReasoningConfig(max_tokens=3000),
        ),
        agent(),
    )

    thread, result = await world.chat("What is the weather in San Francisco today?")

    sent = replay.requests[0].json()
    assert sent["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 2}]
    [answer] = [m for m in await world.messages(thread.id) if m.role == "assistant"]
    assert answer.status == "completed" and answer.tool_calls is None  # nothing to run here
    [tool] = answer.metadata["provider_tools"]
    assert (tool["name"], tool["type"], tool["provider"], tool["status"]) == (
        "web_search",
        "web_search",
        "anthropic",
        "completed",
    )
    citations = answer.metadata["citations"]
    assert len(citations) == 9
    text = answer.content or ""
    assert text[citations[0]["start"] : citations[0]["end"]] == "Temperature: 66°F with clear skies"
    wire = to_wire(answer)
    assert wire["citations"] == citations and wire["provider_tools"] == [tool]
    # No tool message, no tool log: the vendor ran the search.
    assert not [m for m in await world.messages(thread.id) if m.role == "tool"]
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None))
    assert [log.kind for log in logs] == ["llm"]
    assert logs[0].response_body["provider_tools"] == [tool]
    assert logs[0].response_body["citations"] == citations
    frames = world.sink.frames[thread.id]
    searched = [f for f in frames if f["type"] == "web_search_done"]
    done = [f for f in frames if f["type"] == "provider_tool_done"]
    assert [f["message_id"] for f in searched + done] == [answer.id, answer.id]
    assert done[0]["tool"] == tool
    assert searched[0]["result"]["actions"][0]["query"] == "San Francisco weather today"
    # The log list frame carries the reference's provider_tools (a JSON-encoded array).
    logged = [f for f in frames if f["type"] == "log_data" and f["data"]["provider_tools"]]
    assert json.loads(logged[-1]["data"]["provider_tools"]) == [tool]

    await world.run(thread.id, "how about Mexico City?")

    # The second turn carries the search and its encrypted results back as recorded.
    echoed = replay.requests[1].json()["messages"]
    assert echoed == second.request_body["messages"]
    answers = [m for m in await world.messages(thread.id) if m.role == "assistant"]
    assert answers[-1].metadata["provider_tools"][0]["result"]["input"] == {
        "query": "Mexico City weather today"
    }
    assert json.dumps(answers[-1].metadata).count("encrypted_content") >= 1


async def test_gemini_grounding_through_the_engine_stores_character_offsets(
    world: World, replay, client
):
    [recorded, _] = recordings.cassette("gemini/generate_google_search_grounding.yaml")
    replay.queue(recorded.reply())
    install(world.providers, client, environ={"GOOGLE_API_KEY": PLANTED_KEY}, stream=False)
    world.define(
        _model(replay, "google", "gemini-2.5-pro", "/v1beta"),
        prompt(tools=["provider:google_search"]),
        agent(),
    )

    thread, _ = await world.chat("What is the weather in San Francisco today?")

    assert replay.requests[0].json()["tools"] == [{"googleSearch": {}}]
    [answer] = [m for m in await world.messages(thread.id) if m.role == "assistant"]
    text = answer.content or ""
    for cite in answer.metadata["citations"]:
        assert text[cite["start"] : cite["end"]] == cite["cited_text"]


async def test_a_provider_tool_the_model_does_not_run_fails_the_message_visibly(
    world: World, replay, client
):
    """A prompt stored before the save-time rule: the request is refused, never sent
    without the tool."""
    install(world.providers, client, environ={"OPENROUTER_API_KEY": PLANTED_KEY}, stream=False)
    world.define(
        _model(replay, "openrouter", "deepseek/deepseek-chat", "/api/v1"),
        prompt(tools=["provider:code_execution"]),
        agent(),
    )

    thread, result = await world.chat("hi")

    assert replay.requests == []
    failed = (await world.messages(thread.id))[-1]
    assert failed.status == "failed"
    assert "code_execution" in failed.metadata["error"]["message"]
