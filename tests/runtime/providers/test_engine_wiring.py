"""The engine over the real adapters: keys from the env chain, provider data that round-trips,
the exact vendor request on the log, the attempt ladder across vendors, partial replies.

The vendor is the replay server on 127.0.0.1; every session runs through the
engine as in production (store, history, tools, logs, frames).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core.spec import ModelDefinition, ReasoningConfig
from runtime.providers.pricing import thread_cost
from runtime.providers.registry import KEY_NAMES, install, store_env_lookup
from runtime.store.protocol import LogQuery, LogRecord
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY
from .replay import Reply

PREFIXES = {"openai": "/v1", "openrouter": "/api/v1", "anthropic": "/v1", "google": "/v1beta"}
AUTH_HEADERS = {
    "openai": "authorization",
    "openrouter": "authorization",
    "anthropic": "x-api-key",
    "google": "x-goog-api-key",
}


def _model(replay: Any, vendor: str, model_id: str, name: str = "m", **kw: Any) -> ModelDefinition:
    return ModelDefinition(
        name=name,
        provider=vendor,  # type: ignore[arg-type]
        model=model_id,
        base_url=replay.url + PREFIXES[vendor],
        **kw,
    )


async def _logs(world: World, thread_id: str) -> list[LogRecord]:
    return await world.store.list_logs(thread_id, LogQuery(limit=None, kind="llm"))


# --- keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize("vendor", list(PREFIXES))
async def test_a_planted_key_reaches_only_the_auth_header(
    world: World, replay, client, caplog, vendor
):
    """The key comes from the thread's env (the env chain), the vendor answers 401 quoting it
    back; nothing the engine stores or emits holds it: logs, frames, messages, the result."""
    caplog.set_level(logging.DEBUG)
    echo = {
        "error": {
            "message": f"Incorrect API key provided: {PLANTED_KEY}.",
            "type": "authentication_error",
            "code": "invalid_api_key",
        }
    }
    replay.queue(Reply.json(echo, 401), Reply.json(echo, 401))
    install(world.providers, client, env_lookup=store_env_lookup(world.store), environ={})
    world.define(
        _model(replay, vendor, "model-a", fallbacks=["m2"]),
        _model(replay, vendor, "model-b", name="m2"),
        prompt(),
        agent(),
    )
    thread = await world.thread(env={KEY_NAMES[vendor]: PLANTED_KEY})

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "step_error"
    assert [PLANTED_KEY in r.headers[AUTH_HEADERS[vendor]] for r in replay.requests] == [True] * 2
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None))
    assert [(log.model, log.error_type) for log in logs] == [
        ("m", "authentication"),
        ("m2", "authentication"),
    ]
    everything = [
        *(json.dumps(dataclasses.asdict(log), default=str) for log in logs),
        *(json.dumps(frame, default=str) for frame in world.sink.frames[thread.id]),
        *(json.dumps(m.to_dict(), default=str) for m in await world.messages(thread.id)),
        repr(result),
        caplog.text,
    ]
    assert all(PLANTED_KEY not in text for text in everything)
    failed = (await world.messages(thread.id))[-1]
    assert failed.status == "failed" and "[redacted]" in failed.metadata["error"]["message"]


# --- provider data round-trips ---------------------------------------------------------------


class CityArgs(BaseModel):
    city: str


@define_tool("Get the weather in a city.", CityArgs)
async def get_weather(state: Any, args: CityArgs) -> str:
    return f"Sunny in {args.city}"


@define_tool("Get the user's country.")
async def get_country(state: Any) -> str:
    return "Mexico"


def _anthropic_sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _anthropic_message(blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]], stop: str):
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "usage": {"input_tokens": 120, "output_tokens": 1},
            },
        }
    ]
    for index, (start, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 60}}
    )
    events.append({"type": "message_stop"})
    return _anthropic_sse(*events)


SIGNATURE = "EqQBCkYIBRgCKkBthinking-signature-for-the-test"


async def test_anthropic_thinking_and_its_signature_go_back_in_the_tool_loop(
    world: World, replay, client
):
    thinking = (
        {"type": "thinking", "thinking": "", "signature": ""},
        [
            {"type": "thinking_delta", "thinking": "The user wants the weather; "},
            {"type": "thinking_delta", "thinking": "call the tool."},
            {"type": "signature_delta", "signature": SIGNATURE},
        ],
    )
    call = (
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}},
        [{"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}],
    )
    answer = ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Sunny in Paris."}])
    replay.queue(
        Reply.sse(_anthropic_message([thinking, call], "tool_use"), 61),
        Reply.sse(_anthropic_message([answer], "end_turn"), 61),
    )
    install(world.providers, client, environ={"ANTHROPIC_API_KEY": PLANTED_KEY})
    world.register(get_weather)
    world.define(
        _model(replay, "anthropic", "claude-sonnet-4-5"),
        prompt(tools=["get_weather"], reasoning=ReasoningConfig(max_tokens=1024)),
        agent(),
    )

    thread, result = await world.chat("Weather in Paris?")

    assert result.final_text == "Sunny in Paris."
    asked = next(m for m in await world.messages(thread.id) if m.tool_calls)
    assert asked.reasoning_content == "The user wants the weather; call the tool."
    stored = asked.metadata["provider_data"]["anthropic"]["thinking"]
    assert stored == [
        {
            "type": "thinking",
            "thinking": "The user wants the weather; call the tool.",
            "signature": SIGNATURE,
        }
    ]
    second = replay.requests[1].json()
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    turn = second["messages"][1]
    assert turn["role"] == "assistant" and turn["content"][0] == stored[0]  # first, unchanged
    assert turn["content"][1]["type"] == "tool_use"
    result_block = second["messages"][2]["content"][0]
    assert result_block["content"] == "Sunny in Paris" and result_block["is_error"] is False


async def test_gemini_thought_signature_goes_back_on_its_function_call(
    world: World, replay, client
):
    _, second = recordings.cassette("gemini/stream_function_call_thought_signature.yaml")
    replay.queue(
        Reply.sse(recordings.raw("gemini/stream_function_call_thought_signature.sse"), 101),
        second.reply(),
    )
    install(world.providers, client, environ={"GOOGLE_API_KEY": PLANTED_KEY})
    world.register(get_country)
    world.define(
        _model(replay, "google", "gemini-3-pro-preview"),
        prompt(tools=["get_country"], text=""),
        agent(),
    )

    thread, result = await world.chat("What is the capital of the user country? Call the tool")

    assert result.final_text == "The capital of Mexico is Mexico City."
    asked = next(m for m in await world.messages(thread.id) if m.tool_calls)
    [call] = asked.tool_calls or []
    signature = asked.metadata["provider_data"]["google"]["call_signatures"][call["id"]]
    assert signature.startswith("EpwICpkIAXLI2nxlU6gsWZaZHRYkX1or")
    sent = replay.requests[1].json()["contents"]
    assert sent[1]["parts"][0]["functionCall"]["name"] == "get_country"
    assert sent[1]["parts"][0]["thoughtSignature"] == signature
    assert sent[2]["parts"][0]["functionResponse"]["response"] == {"result": "Mexico"}


async def test_openrouter_reasoning_details_come_back_and_its_billed_cost_is_the_log_cost(
    world: World, replay, client
):
    venus, mars = recordings.cassette("openrouter/chat_nonstream_usage_reasoning_details.yaml")
    replay.queue(venus.reply(), mars.reply())
    install(world.providers, client, environ={"OPENROUTER_API_KEY": PLANTED_KEY}, stream=False)
    world.define(
        _model(replay, "openrouter", "openai/gpt-5-mini", input_price=100.0, output_price=100.0),
        prompt(text="Be helpful."),
        agent(),
    )

    thread, _ = await world.chat("Tell me about Venus")
    await world.run(thread.id, "Tell me about Mars")

    first_reply = (await world.messages(thread.id))[1]
    details = first_reply.reasoning_details
    assert [d["type"] for d in details or []] == ["reasoning.summary", "reasoning.encrypted"]
    sent = replay.requests[1].json()["messages"]
    assert sent[2]["role"] == "assistant" and sent[2]["reasoning_details"] == details
    venus_log, mars_log = await _logs(world, thread.id)
    # No billed cost in the first recording: computed from the model's prices (cached tokens at
    # the input price, as the model has no cached price).
    tokens = venus_log.input_tokens + venus_log.output_tokens
    assert venus_log.cost_total == pytest.approx(tokens * 100.0 / 1_000_000)
    assert mars_log.cost_total == pytest.approx(0.00435825)  # OpenRouter's usage.cost
    assert mars_log.response_body is not None
    assert mars_log.response_body["reported_cost"] == pytest.approx(0.00435825)
    assert await thread_cost(world.store, thread.id) == pytest.approx(
        venus_log.cost_total + mars_log.cost_total
    )


# --- the ladder across vendors, partial replies ---------------------------------------------


async def test_openai_overloaded_twice_then_the_anthropic_fallback_answers(
    world: World, replay, client
):
    overloaded = {"error": {"message": "The server had an error", "type": "server_error"}}
    [text] = recordings.cassette("anthropic/messages_stream_text.yaml")
    replay.queue(Reply.json(overloaded, 503), Reply.json(overloaded, 503), text.reply())
    install(
        world.providers,
        client,
        environ={"OPENAI_API_KEY": PLANTED_KEY, "ANTHROPIC_API_KEY": PLANTED_KEY},
    )
    world.define(
        _model(replay, "openai", "gpt-4o-mini", fallbacks=["claude"]),
        _model(replay, "anthropic", "claude-3-5-haiku-latest", name="claude"),
        prompt(),
        agent(),
    )

    thread, result = await world.chat("Name two pelicans.")

    assert result.stop_reason == "stop_on_response" and result.final_text
    assert [r.path for r in replay.requests] == ["/v1/chat/completions"] * 2 + ["/v1/messages"]
    logs = await _logs(world, thread.id)
    assert [(log.provider, log.attempt, log.status_code, log.error_type) for log in logs] == [
        ("openai", 1, 503, "overloaded"),
        ("openai", 2, 503, "overloaded"),
        ("anthropic", 3, 200, ""),
    ]
    assert [log.retry_of_id for log in logs] == [None, logs[0].id, logs[1].id]
    for log, sent in zip(logs, replay.requests, strict=True):
        assert log.request_body is not None and log.request_body["body"] == sent.json()
        assert log.request_body["url"].endswith(sent.path)
    frames = world.sink.of_type(thread.id, "fallback_triggered")
    assert [(f["from"], f["to"]) for f in frames] == [("m", "claude")]
    assert len(world.sleeps) == 1


async def test_a_stream_cut_after_text_is_stored_failed_with_the_partial_text(
    world: World, replay, client
):
    _, final = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")
    cut = Reply.sse(final.body[: len(final.body) * 2 // 3], 97)
    cut.cut = True
    replay.queue(cut)
    install(world.providers, client, environ={"OPENAI_API_KEY": PLANTED_KEY})
    world.define(_model(replay, "openai", "gpt-4o-mini"), prompt(), agent())

    thread, result = await world.chat("hi")

    assert result.stop_reason == "step_error" and len(replay.requests) == 1  # never retried
    reply = (await world.messages(thread.id))[-1]
    chunks = "".join(f["chunk"] for f in world.sink.of_type(thread.id, "message_chunk"))
    assert reply.status == "failed" and reply.content and reply.content == chunks
    assert reply.metadata["error"]["code"] == "network"
    [log] = await _logs(world, thread.id)
    assert log.error_type == "network" and log.response_body is not None
    assert log.response_body["partial_text"] == reply.content


def test_inline_image_data_is_not_kept_on_the_log():
    from runtime.providers.adapter import strip_inline_data

    body = {
        "messages": [
            {
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                ]
            },
            {"content": [{"type": "image", "source": {"type": "base64", "data": "QUJD"}}]},
            {"parts": [{"inlineData": {"mimeType": "image/png", "data": "QUJDRA=="}}]},
        ]
    }
    assert strip_inline_data(body) == {
        "messages": [
            {
                "content": [
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,[base64: 4 chars]"},
                    }
                ]
            },
            {
                "content": [
                    {"type": "image", "source": {"type": "base64", "data": "[base64: 4 chars]"}}
                ]
            },
            {"parts": [{"inlineData": {"mimeType": "image/png", "data": "[base64: 8 chars]"}}]},
        ]
    }
