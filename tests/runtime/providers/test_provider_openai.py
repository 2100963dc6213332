"""OpenAI Chat Completions adapter against recorded responses replayed over a socket."""

from __future__ import annotations

import json

import httpx
import pytest

from runtime.core.spec import ReasoningConfig
from runtime.providers.base import ToolSchema
from runtime.providers.errors import AdapterError
from runtime.providers.openai.chat_completions import OpenAIProvider

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import collect, request, user, without
from .replay import ReplayServer, Reply

FILE_TOOLS = [
    ToolSchema(
        name,
        "",
        {
            "additionalProperties": False,
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "type": "object",
        },
    )
    for name in ("create_file", "delete_file")
]
MULTIPLY = ToolSchema(
    "multiply",
    "Multiply two numbers.",
    {
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "type": "object",
    },
)


def adapter(client: httpx.AsyncClient, replay: ReplayServer, **kw: object) -> OpenAIProvider:
    return OpenAIProvider(client, PLANTED_KEY, replay.url + "/v1", **kw)  # type: ignore[arg-type]


async def test_plain_text_with_reasoning_token_usage(client, replay):
    [recorded] = recordings.cassette("openai/chat_nonstream_reasoning_tokens.yaml")
    replay.queue(recorded.reply())
    provider = adapter(client, replay, stream=False)

    out = await collect(provider, request([user("hello")], model="o3-mini"))

    assert out.text == "Hello there! How can I help you today?"
    assert out.finish.reason == "stop"
    usage = out.finish.usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (7, 87, 64)
    assert out.finish.response_model == "o3-mini-2025-01-31"
    sent = replay.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {PLANTED_KEY}"
    # The recorded body plus what the test inputs do not set (max_completion_tokens).
    assert sent.json() == without(recorded.request_body, "max_completion_tokens")


async def test_parallel_tool_calls_then_results_round_trip(client, replay):
    first, second = recordings.cassette("openai/chat_nonstream_parallel_tool_calls.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False)
    history = [user("Delete the file `.env` and create `test.txt`")]
    system = "Just call tools without asking for confirmation."

    out = await collect(provider, request(history, model="gpt-4o", system=system, tools=FILE_TOOLS))

    assert out.finish.reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in out.calls] == [
        ("call_jYdIdRZHxZTn5bWCq5jlMrJi", "delete_file", {"path": ".env"}),
        ("call_TmlTVWQbzrXCZ4jNsCVNbNqu", "create_file", {"path": "test.txt"}),
    ]
    history += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in out.calls
            ],
        },
        {"role": "tool", "tool_call_id": out.calls[0].id, "name": "delete_file", "content": "true"},
        {
            "role": "tool",
            "tool_call_id": out.calls[1].id,
            "name": "create_file",
            "content": "Success",
        },
    ]
    out = await collect(provider, request(history, model="gpt-4o", system=system, tools=FILE_TOOLS))

    assert out.text.startswith("The file `.env` has been deleted")
    # pydantic-ai marks its tools strict; ToolSchema has no such flag.
    for recorded, sent in zip((first, second), replay.requests, strict=True):
        assert sent.json() == without(recorded.request_body, "tools.*.function.strict")


async def test_cached_tokens_are_reported(client, replay):
    _, cached = recordings.cassette("openai/chat_nonstream_cached_tokens.yaml")
    replay.queue(cached.reply())

    out = await collect(adapter(client, replay, stream=False), request([user("x")]))

    assert out.text == "OK"
    usage = out.finish.usage
    assert (usage.input_tokens, usage.cached_tokens, usage.output_tokens) == (4020, 4012, 4)


async def test_streamed_tool_call_then_streamed_text(client, replay):
    call, answer = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")
    replay.queue(call.reply(chunk_size=41), answer.reply(chunk_size=13))
    provider = adapter(client, replay)
    history = [user("What is 1231 * 2331?")]

    out = await collect(provider, request(history, model="gpt-4o-mini", tools=[MULTIPLY]))

    [done] = out.calls
    assert (done.id, done.name, json.loads(done.arguments)) == (
        "call_1EYWDzueHEp8OsB8jJSEp7WB",
        "multiply",
        {"a": 1231, "b": 2331},
    )
    assert out.starts[0].id == done.id and out.starts[0].name == "multiply"
    assert "".join(out.argument_deltas(done.id)) == done.arguments
    assert len(out.argument_deltas(done.id)) > 5  # fragments reach the caller as they arrive
    assert out.finish.reason == "tool_calls"

    history += [
        {"role": "assistant", "content": None, "tool_calls": [_call(done)]},
        {"role": "tool", "tool_call_id": done.id, "name": "multiply", "content": "2869461"},
    ]
    out = await collect(provider, request(history, model="gpt-4o-mini", tools=[MULTIPLY]))

    assert len(out.text_deltas) > 10
    assert "2869461" in out.text.replace(",", "")
    assert out.finish.reason == "stop"
    assert out.finish.usage.input_tokens > 0
    first_body = replay.requests[0].json()
    # simonw/llm sends no tool_choice; we send the prompt's ("auto" by default).
    assert without(first_body, "tool_choice") == call.request_body


async def test_streamed_parallel_tool_calls_are_assembled_by_index(client, replay):
    replay.queue(Reply.sse(recordings.raw("openai/chat_stream_parallel_tool_calls.sse"), 29))

    out = await collect(adapter(client, replay), request([user("capital, weather, product")]))

    assert [(c.id, c.name, c.arguments) for c in out.calls] == [
        ("call_3rqTYrA6H21AYUaRGP4F66oq", "get_country", "{}"),
        ("call_Xw9XMKBJU48kAAd78WgIswDx", "get_product_name", "{}"),
    ]
    assert out.finish.reason == "tool_calls"
    assert (out.finish.usage.input_tokens, out.finish.usage.output_tokens) == (364, 40)


def test_request_body_for_streaming_with_tool_choice_and_reasoning():
    provider = OpenAIProvider(httpx.AsyncClient(), PLANTED_KEY)
    built = provider.build_request(
        request(
            [
                user(
                    [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    ]
                )
            ],
            model="o3",
            tools=[MULTIPLY],
            tool_choice={"name": "multiply"},
            parallel_tool_calls=False,
            reasoning=ReasoningConfig(effort="high"),
        )
    )
    assert built.url == "https://api.openai.com/v1/chat/completions"
    assert built.body["stream_options"] == {"include_usage": True}
    assert built.body["tool_choice"] == {"type": "function", "function": {"name": "multiply"}}
    assert built.body["parallel_tool_calls"] is False
    assert built.body["reasoning_effort"] == "high"
    assert built.body["messages"][0]["content"][1]["type"] == "image_url"
    assert "authorization" not in built.headers


# --- errors ------------------------------------------------------------------------------------


async def test_400_unsupported_value_is_invalid_request(client, replay):
    [recorded] = recordings.cassette("openai/chat_error_400_unsupported_value.yaml")
    replay.queue(recorded.reply())

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("Hello")]))

    error = caught.value
    assert (error.code, error.status, error.retryable) == ("invalid_request", 400, False)
    assert error.vendor_code == "unsupported_value"
    assert "does not support 'system'" in error.message


async def test_429_insufficient_quota_is_not_retryable(client, replay):
    replay.queue(
        Reply(
            429,
            {"content-type": "application/json"},
            recordings.raw("openai/error_429_insufficient_quota.json"),
        )
    )

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("Hello")]))

    assert (caught.value.code, caught.value.retryable) == ("rate_limit", False)


@pytest.mark.parametrize(
    ("status", "error", "headers", "code", "retryable", "retry_after"),
    [
        # Written from the docs / WIRE.md (no recorded fixture for these):
        (
            429,
            {
                "message": "Rate limit reached … Please try again in 2s",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            },
            {"retry-after-ms": "1500"},
            "rate_limit",
            True,
            1.5,
        ),
        (
            400,
            {
                "message": "This model's maximum context length is 128000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
                "param": "messages",
            },
            {},
            "context_too_long",
            False,
            None,
        ),
        (
            500,
            {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
            },
            {},
            "unknown",
            True,
            None,
        ),
        (
            503,
            {"message": "overloaded", "type": "server_error"},
            {"retry-after": "3"},
            "overloaded",
            True,
            3.0,
        ),
        (504, {"message": "gateway timeout"}, {}, "timeout", True, None),
        (
            400,
            {"message": "bad", "type": "invalid_request_error"},
            {"x-should-retry": "true"},
            "invalid_request",
            True,
            None,
        ),
    ],
)
async def test_error_classes(client, replay, status, error, headers, code, retryable, retry_after):
    replay.queue(Reply.json({"error": error}, status, **headers))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("Hello")]))

    assert (caught.value.code, caught.value.retryable) == (code, retryable)
    assert caught.value.retry_after == retry_after


async def test_error_event_mid_stream_is_raised(client, replay):
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n'
        b'data: {"error":{"message":"The server had an error","type":"server_error"}}\n\n'
    )
    replay.queue(Reply.sse(body))
    events = []

    with pytest.raises(AdapterError) as caught:
        async for event in adapter(client, replay).stream(request([user("Hi")])):
            events.append(event)

    assert caught.value.code == "unknown" and caught.value.retryable
    assert [getattr(e, "text", None) for e in events] == ["Hel"]


async def test_stream_cut_mid_way_is_an_error_not_a_short_reply(client, replay):
    _, answer = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")
    replay.queue(answer.reply(chunk_size=200).cut_after(8))
    texts = []

    with pytest.raises(AdapterError) as caught:
        async for event in adapter(client, replay).stream(request([user("Hi")])):
            texts.append(getattr(event, "text", ""))

    assert caught.value.code == "network" and caught.value.retryable
    assert "".join(texts)  # some text did arrive before the cut


async def test_stream_closed_cleanly_without_done_is_incomplete(client, replay):
    body = recordings.raw("openai/chat_stream_parallel_tool_calls.sse")
    body = body[: body.index(b"data: [DONE]")]
    replay.queue(Reply.sse(body))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("Hi")]))

    assert "[DONE]" in caught.value.message and caught.value.code == "network"


def _call(done):
    return {
        "id": done.id,
        "type": "function",
        "function": {"name": done.name, "arguments": done.arguments},
    }


async def test_a_body_without_choices_is_an_error_not_an_empty_answer(client, replay):
    # What a model list (or a proxy's page of JSON) looks like when served in its place.
    body = json.dumps({"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]})
    replay.queue(Reply(200, {"content-type": "application/json"}, body.encode()))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay, stream=False), request([user("x")]))

    assert "no choices" in caught.value.message
