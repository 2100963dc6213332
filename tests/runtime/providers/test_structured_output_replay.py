"""Structured output through the engine and each real adapter, against recorded vendor replies.

The prompt declares the schema the recording was made with; the replay server
(a real local HTTP socket) answers with the recorded response. The request
must carry the schema in the vendor's native form exactly as recorded, and the
recorded JSON answer must become the stored, completed assistant message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.core.spec import ModelCapabilities, ModelDefinition
from runtime.providers.registry import KEY_NAMES, install
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY


@define_tool("Get the user's country.")
async def get_user_country(state: Any) -> str:
    return "Mexico"


def _native(vendor: str, body: dict[str, Any]) -> Any:
    """The part of a request body that carries the response schema."""
    if vendor in ("openai", "openrouter"):
        return body["response_format"]
    if vendor == "anthropic":
        return body["output_config"]
    config = body["generationConfig"]
    return {k: config[k] for k in ("responseMimeType", "responseJsonSchema") if k in config}


def _schema(vendor: str, native: Any) -> dict[str, Any]:
    if vendor in ("openai", "openrouter"):
        return dict(native["json_schema"]["schema"])
    if vendor == "anthropic":
        return dict(native["format"]["schema"])
    return dict(native["responseJsonSchema"])


# case → (vendor, path prefix, model id, cassette, streamed)
CASES = {
    "openai": ("openai", "/v1", "gpt-4o", "openai/chat_nonstream_json_schema_output.yaml", False),
    "openrouter": (
        "openrouter",
        "/api/v1",
        "anthropic/claude-haiku-4.5",
        "openrouter/chat_nonstream_json_schema_output.yaml",
        False,
    ),
    "anthropic": (
        "anthropic",
        "/v1",
        "claude-sonnet-4-5",
        "anthropic/messages_nonstream_json_schema_output.yaml",
        False,
    ),
    "anthropic-stream": (
        "anthropic",
        "/v1",
        "claude-sonnet-4-5",
        "anthropic/messages_stream_json_schema_output.yaml",
        True,
    ),
    "google": (
        "google",
        "/v1beta",
        "gemini-2.0-flash",
        "gemini/generate_json_schema_output.yaml",
        False,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_structured_output_is_sent_natively_and_the_json_answer_is_stored(
    world: World, replay, client, case
):
    vendor, prefix, model_id, cassette, streamed = CASES[case]
    interactions = recordings.cassette(cassette)
    recorded = _native(vendor, interactions[0].request_body)
    schema = _schema(vendor, recorded)
    replay.queue(*(i.reply() for i in interactions))
    install(world.providers, client, environ={KEY_NAMES[vendor]: PLANTED_KEY}, stream=streamed)
    tools = [get_user_country] if vendor == "openai" else []  # that recording calls a tool first
    world.register(*tools)
    world.define(
        ModelDefinition(
            name="m",
            provider=vendor,  # type: ignore[arg-type]
            model=model_id,
            base_url=replay.url + prefix,
            capabilities=ModelCapabilities(structured_outputs=True),
        ),
        prompt(tools=[t.name for t in tools] or None, response_schema=schema),
        agent(),
    )

    thread, result = await world.chat("Answer, please.")

    assert result.stop_reason == "stop_on_response"
    assert len(replay.requests) == len(interactions)
    for sent in replay.requests:
        native = _native(vendor, sent.json())
        if vendor in ("openai", "openrouter"):
            # The name is ours to choose (the schema's title, else "response"); the rest is fixed.
            assert native["type"] == recorded["type"] == "json_schema"
            assert native["json_schema"]["name"]
            assert native["json_schema"]["schema"] == recorded["json_schema"]["schema"]
            assert native["json_schema"]["strict"] == recorded["json_schema"]["strict"]
        else:
            assert native == recorded
    final = (await world.messages(thread.id))[-1]
    assert final.role == "assistant" and final.status == "completed"
    answer = json.loads(final.content or "")
    assert isinstance(answer, dict) and set(schema["required"]) <= set(answer)
