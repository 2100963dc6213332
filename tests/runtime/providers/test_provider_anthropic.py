"""Anthropic Messages adapter against recorded responses replayed over a socket."""

from __future__ import annotations

import json

import httpx
import pytest

from runtime.core.spec import ReasoningConfig
from runtime.providers.anthropic.provider import AnthropicProvider
from runtime.providers.base import ToolSchema
from runtime.providers.errors import AdapterError

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import collect, request, user, without
from .replay import ReplayServer, Reply

ENTITY_TOOL = ToolSchema(
    "retrieve_entity_info",
    "Get the knowledge about the given entity.",
    {
        "additionalProperties": False,
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "type": "object",
    },
)
PELICAN_TOOL = ToolSchema("pelican_name_generator", "", {"properties": {}, "type": "object"})


def adapter(client: httpx.AsyncClient, replay: ReplayServer, **kw: object) -> AnthropicProvider:
    return AnthropicProvider(client, PLANTED_KEY, replay.url + "/v1", **kw)  # type: ignore[arg-type]


async def test_text_and_parallel_tool_use_then_results_in_one_user_turn(client, replay):
    first, second = recordings.cassette("anthropic/messages_nonstream_parallel_tool_use.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False, max_tokens=4096)
    system = first.request_body["system"]
    history = [user("Alice, Bob, Charlie and Daisy are a family. Who is the youngest?")]

    out = await collect(
        provider, request(history, model="claude-haiku-4-5", system=system, tools=[ENTITY_TOOL])
    )

    assert out.text.startswith("I'll help you find out who is the youngest")
    assert [json.loads(c.arguments)["name"] for c in out.calls] == [
        "Alice",
        "Bob",
        "Charlie",
        "Daisy",
    ]
    assert out.calls[0].id == "toolu_0167cfEnoQaPviGdVXA95zcu"
    assert out.finish.reason == "tool_calls"
    assert (out.finish.usage.input_tokens, out.finish.usage.output_tokens) == (423, 202)

    results = [
        "alice is bob's wife",
        "bob is alice's husband",
        "charlie is alice's son",
        "daisy is bob's daughter and charlie's younger sister",
    ]
    history.append(
        {
            "role": "assistant",
            "content": out.text,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in out.calls
            ],
        }
    )
    history += [
        {"role": "tool", "tool_call_id": c.id, "name": c.name, "content": r}
        for c, r in zip(out.calls, results, strict=True)
    ]
    out = await collect(
        provider, request(history, model="claude-haiku-4-5", system=system, tools=[ENTITY_TOOL])
    )

    assert "Daisy is the youngest" in out.text and out.finish.reason == "stop"
    for recorded, sent in zip((first, second), replay.requests, strict=True):
        assert sent.json() == recorded.request_body  # exactly the recorded body
        assert sent.headers["x-api-key"] == PLANTED_KEY
        assert sent.headers["anthropic-version"] == "2023-06-01"


async def test_thinking_block_and_signature_round_trip(client, replay):
    first, second = recordings.cassette("anthropic/messages_nonstream_thinking.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False, max_tokens=4096)
    thinking = ReasoningConfig(max_tokens=1024)
    history = [user("How do I cross the street?")]

    out = await collect(provider, request(history, model="claude-sonnet-4-5", reasoning=thinking))

    assert out.reasoning.startswith("This is a straightforward question about pedestrian safety.")
    [block] = out.finish.provider_data["anthropic"]["thinking"]
    assert block["signature"].startswith("Eq8CCkYICxgCKkDdadQOXMzNBqjrNVAK")
    history += [
        {"role": "assistant", "content": out.text, "provider_data": out.finish.provider_data},
        user("Considering the way to cross the street, analogously, how do I cross the river?"),
    ]
    await collect(provider, request(history, model="claude-sonnet-4-5", reasoning=thinking))

    for recorded, sent in zip((first, second), replay.requests, strict=True):
        assert sent.json() == recorded.request_body


async def test_cache_reads_and_writes_count_as_prompt_tokens(client, replay):
    _, second = recordings.cassette("anthropic/messages_nonstream_cache_usage.yaml")
    replay.queue(second.reply())

    out = await collect(adapter(client, replay, stream=False), request([user("Python?")]))

    usage = out.finish.usage
    assert (usage.input_tokens, usage.cached_tokens, usage.output_tokens) == (
        3 + 418 + 1111,
        1111,
        33,
    )


async def test_streamed_text(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_text.yaml")
    replay.queue(recorded.reply(chunk_size=31))

    out = await collect(
        adapter(client, replay), request([user("Two names for a pet pelican, be brief")])
    )

    assert out.text_deltas == ["-", " Captain", "\n- Sc", "oop"]
    assert out.finish.reason == "stop"
    assert (out.finish.usage.input_tokens, out.finish.usage.output_tokens) == (17, 10)
    assert out.finish.response_model == "claude-sonnet-4-5-20250929"


async def test_streamed_parallel_tool_use_without_arguments(client, replay):
    replay.queue(Reply.sse(recordings.raw("anthropic/messages_stream_parallel_tool_use.sse"), 64))

    out = await collect(
        adapter(client, replay),
        request([user("Two names for a pet pelican")], tools=[PELICAN_TOOL]),
    )

    assert (
        out.text
        == "I'll help you generate two names for a pet pelican using the pelican name generator tool."
    )
    assert [(c.id, c.name, c.arguments) for c in out.calls] == [
        ("toolu_017ngBid8gmdReTeroVSZf7r", "pelican_name_generator", "{}"),
        ("toolu_01FJrHJrmnfEqR6NxkQ3yhpu", "pelican_name_generator", "{}"),
    ]
    assert out.finish.reason == "tool_calls" and out.finish.usage.output_tokens == 82


async def test_streamed_tool_round_trip_request_shape(client, replay):
    first, second = recordings.cassette("anthropic/messages_stream_parallel_tool_use.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay)
    history = [user("Two names for a pet pelican")]

    out = await collect(
        provider, request(history, model="claude-3-5-haiku-latest", tools=[PELICAN_TOOL])
    )
    history.append(
        {
            "role": "assistant",
            "content": out.text,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in out.calls
            ],
        }
    )
    history += [
        {"role": "tool", "tool_call_id": c.id, "name": c.name, "content": name}
        for c, name in zip(out.calls, ("Charles", "Sammy"), strict=True)
    ]
    out = await collect(
        provider, request(history, model="claude-3-5-haiku-latest", tools=[PELICAN_TOOL])
    )

    assert "Charles" in out.text and "Sammy" in out.text
    sent = replay.requests[1].json()
    recorded = second.request_body
    # Differences that are ours or the recorder's: max_tokens default, temperature (we send
    # none), tool_choice (we send the prompt's), is_error (we always say), and simonw/llm
    # appended a space to the assistant text.
    assert (
        sent["messages"][1]["content"][0]["text"] + " "
        == recorded["messages"][1]["content"][0]["text"]
    )
    assert without(
        sent,
        "max_tokens",
        "tool_choice",
        "messages.1.content.0",
        "messages.2.content.0.is_error",
        "messages.2.content.1.is_error",
    ) == without(recorded, "max_tokens", "temperature", "messages.1.content.0")


async def test_client_tool_arguments_from_fragments_and_server_tools_skipped(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_tool_use_input_json_delta.yaml")
    replay.queue(recorded.reply(chunk_size=211))

    out = await collect(
        adapter(client, replay), request([user("What is the current USD to EUR exchange rate?")])
    )

    [call] = out.calls  # the server_tool_use block is not a client call
    assert call.name == "get_exchange_rate"
    assert json.loads(call.arguments) == {"from_currency": "USD", "to_currency": "EUR"}
    assert len(out.argument_deltas(call.id)) > 3
    assert out.finish.reason == "tool_calls"


async def test_streamed_thinking_with_signature(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_thinking.yaml")
    replay.queue(recorded.reply())

    out = await collect(
        adapter(client, replay),
        request(
            [user("Two names for a pet pelican, be brief")],
            reasoning=ReasoningConfig(max_tokens=1024),
        ),
    )

    assert out.reasoning.startswith("The user wants two names for a pet pelican")
    [block] = out.finish.provider_data["anthropic"]["thinking"]
    assert block["thinking"] == out.reasoning and len(block["signature"]) > 100
    assert out.text
    assert replay.requests[0].json()["thinking"] == {"type": "enabled", "budget_tokens": 1024}


async def test_excluded_reasoning_is_not_streamed_but_signature_is_kept(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_thinking.yaml")
    replay.queue(recorded.reply())

    out = await collect(
        adapter(client, replay),
        request([user("x")], reasoning=ReasoningConfig(effort="low", exclude=True)),
    )

    assert out.reasoning == ""
    assert out.finish.provider_data["anthropic"]["thinking"][0]["signature"]


def test_request_shape_for_choices_images_and_system_messages():
    provider = AnthropicProvider(httpx.AsyncClient(), PLANTED_KEY)
    body = provider.build_request(
        request(
            [
                {"role": "system", "content": "Extra rule."},
                user(
                    [
                        {"type": "text", "text": "what is this"},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                        },
                        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                    ]
                ),
            ],
            system="Be brief.",
            tools=[PELICAN_TOOL],
            tool_choice="required",
            parallel_tool_calls=False,
            reasoning=ReasoningConfig(effort="high"),
        )
    ).body
    assert body["system"] == "Be brief.\n\nExtra rule."
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert body["max_tokens"] > 16384
    assert body["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert body["messages"][0]["content"][2]["source"] == {
        "type": "url",
        "url": "https://example.com/cat.jpg",
    }


# --- errors ------------------------------------------------------------------------------------


async def test_400_invalid_request(client, replay):
    [recorded] = recordings.cassette("anthropic/error_400_invalid_request.yaml")
    replay.queue(recorded.reply())

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("What is 2+2?")]))

    error = caught.value
    assert (error.code, error.status, error.retryable) == ("invalid_request", 400, False)
    assert error.request_id == "req_011Ca7jT9AHpgXgdv8igm4z9"


async def test_prompt_too_long_is_context_too_long(client, replay):
    replay.queue(recordings.txtar_reply("anthropic/error_400_prompt_too_long.txtar", "streaming"))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("yo")]))

    assert (caught.value.code, caught.value.retryable) == ("context_too_long", False)
    assert "205429 tokens > 200000 maximum" in caught.value.message


@pytest.mark.parametrize(
    ("status", "error_type", "headers", "code", "retryable", "retry_after"),
    [
        # Bodies from WIRE.md: the 529 body is quoted from anthropics/claude-code#35792,
        # the others follow Anthropic's error table (no recorded fixture).
        (529, "overloaded_error", {}, "overloaded", True, None),
        (429, "rate_limit_error", {"retry-after": "7"}, "rate_limit", True, 7.0),
        (401, "authentication_error", {}, "authentication", False, None),
        (500, "api_error", {}, "unknown", True, None),
        (413, "request_too_large", {}, "context_too_long", False, None),
    ],
)
async def test_error_classes(
    client, replay, status, error_type, headers, code, retryable, retry_after
):
    body = {
        "type": "error",
        "error": {"type": error_type, "message": "Overloaded"},
        "request_id": "req_x",
    }
    replay.queue(Reply.json(body, status, **headers))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("hi")]))

    assert (caught.value.code, caught.value.retryable, caught.value.retry_after) == (
        code,
        retryable,
        retry_after,
    )


async def test_error_event_after_text_is_raised(client, replay):
    # Mid-stream `event: error` as documented (vercel/ai mock; no recorded fixture).
    [recorded] = recordings.cassette("anthropic/messages_stream_text.yaml")
    body = recorded.body[: recorded.body.index(b"event: content_block_stop")]
    body += (
        b'event: error\ndata: {"type":"error","error":{"details":null,"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n'
    )
    replay.queue(Reply.sse(body))
    texts = []

    with pytest.raises(AdapterError) as caught:
        async for event in adapter(client, replay).stream(request([user("hi")])):
            texts.append(getattr(event, "text", ""))

    assert (caught.value.code, caught.value.retryable) == ("overloaded", True)
    assert "".join(texts) == "- Captain\n- Scoop"


async def test_stream_without_message_stop_is_incomplete(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_text.yaml")
    replay.queue(Reply.sse(recorded.body[: recorded.body.index(b"event: message_stop")]))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("hi")]))

    assert "message_stop" in caught.value.message


async def test_stream_cut_mid_event(client, replay):
    [recorded] = recordings.cassette("anthropic/messages_stream_text.yaml")
    replay.queue(recorded.reply(chunk_size=150).cut_after(4))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("hi")]))

    assert caught.value.code == "network"
