"""OpenRouter adapter: OpenAI dialect plus routing, reasoning details and cost."""

from __future__ import annotations

import json

import httpx
import pytest

from runtime.core.spec import ModelDefinition, ReasoningConfig
from runtime.providers.base import ToolSchema
from runtime.providers.errors import AdapterError
from runtime.providers.openrouter.provider import OpenRouterProvider

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import collect, request, user, without
from .replay import ReplayServer, Reply

LLM_VERSION = ToolSchema(
    "llm_version", "Return the installed version of llm", {"properties": {}, "type": "object"}
)
DIVIDE = ToolSchema(
    "divide",
    "Divide two numbers.",
    {
        "additionalProperties": False,
        "description": "Divide two numbers.",
        "properties": {
            "denominator": {"type": "number"},
            "numerator": {"type": "number"},
            "on_inf": {"default": "infinity", "enum": ["error", "infinity"], "type": "string"},
        },
        "required": ["numerator", "denominator"],
        "type": "object",
    },
)


def adapter(client: httpx.AsyncClient, replay: ReplayServer, **kw: object) -> OpenRouterProvider:
    return OpenRouterProvider(client, PLANTED_KEY, replay.url + "/api/v1", **kw)  # type: ignore[arg-type]


async def test_tool_call_with_upstream_id_format(client, replay):
    [recorded] = recordings.cassette("openrouter/chat_nonstream_tool_call.yaml")
    replay.queue(recorded.reply())
    provider = adapter(client, replay, stream=False)

    out = await collect(
        provider,
        request([user("What is 123 / 456?")], model="mistralai/mistral-small", tools=[DIVIDE]),
    )

    [call] = out.calls
    assert (call.id, call.name) == ("3sniiMddS", "divide")
    assert json.loads(call.arguments) == {
        "numerator": 123,
        "denominator": 456,
        "on_inf": "infinity",
    }
    assert out.finish.reason == "tool_calls" and out.finish.served_by == "Mistral"
    assert out.text == ""
    # Same body as recorded, plus usage accounting (usage.include adds the billed cost).
    assert replay.requests[0].json() == {**recorded.request_body, "usage": {"include": True}}


async def test_routing_preferences_and_reported_usage(client, replay):
    [recorded] = recordings.cassette("openrouter/chat_nonstream_provider_routing.yaml")
    replay.queue(recorded.reply())
    model = ModelDefinition(
        name="grok", provider="openrouter", model="x-ai/grok-4", included_providers=["xai", "azure"]
    )
    provider = OpenRouterProvider.for_model(model, client=client, api_key=PLANTED_KEY, stream=False)
    provider.base_url = replay.url + "/api/v1"

    out = await collect(provider, request([user("Who are you")], model=model.model))

    assert out.text.startswith("I'm Grok")
    assert out.finish.response_model == "x-ai/grok-4" and out.finish.served_by == "xAI"
    usage = out.finish.usage
    assert (
        usage.input_tokens,
        usage.cached_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
    ) == (
        687,
        682,
        240,
        165,
    )
    sent = replay.requests[0].json()
    # includedProviders → try these upstreams in this order, and no others.
    assert sent["provider"] == {"order": ["xai", "azure"], "allow_fallbacks": False}


async def test_reasoning_details_and_cost_non_streaming(client, replay):
    venus, mars = recordings.cassette("openrouter/chat_nonstream_usage_reasoning_details.yaml")
    replay.queue(venus.reply(), mars.reply())
    provider = adapter(client, replay, stream=False)

    out = await collect(
        provider,
        request([user("Tell me about Venus")], model="openai/gpt-5-mini", system="Be helpful."),
    )
    assert out.reasoning.startswith("**Exploring Venus**")
    details = out.finish.provider_data["openrouter"]["reasoning_details"]
    assert [d["type"] for d in details] == ["reasoning.summary", "reasoning.encrypted"]
    assert out.finish.reported_cost is None  # this recording was made without usage.include

    out = await collect(
        provider,
        request([user("Tell me about Mars")], model="openai/gpt-5-mini", system="Be helpful."),
    )
    assert out.finish.reported_cost == pytest.approx(0.00435825)
    assert out.finish.usage.reasoning_tokens == 960
    assert replay.requests[1].json() == mars.request_body


async def test_streamed_reasoning_with_keepalives_and_signature(client, replay):
    replay.queue(Reply.sse(recordings.raw("openrouter/chat_stream_reasoning.sse"), 53))
    provider = adapter(client, replay)

    out = await collect(
        provider,
        request(
            [user("What is 2+2?")],
            model="anthropic/claude-sonnet-4.5",
            reasoning=ReasoningConfig(include=True),
        ),
    )

    assert out.text == "2 + 2 = 4"
    assert out.reasoning.startswith("This is a simple arithmetic question.")
    [detail] = out.finish.provider_data["openrouter"]["reasoning_details"]
    assert detail["type"] == "reasoning.text" and detail["text"] == out.reasoning
    assert detail["signature"].startswith("Et0BCkgIChACGAIqQA2s7h7")
    assert out.finish.reason == "stop"  # the later usage chunk's null finish does not erase it
    assert out.finish.reported_cost == pytest.approx(0.000669)
    assert out.finish.usage.reasoning_tokens == 13
    assert replay.requests[0].json()["reasoning"] == {"enabled": True}


async def test_reasoning_details_are_sent_back_on_the_assistant_turn():
    provider = OpenRouterProvider(httpx.AsyncClient(), PLANTED_KEY)
    details = [
        {
            "type": "reasoning.text",
            "text": "hmm",
            "signature": "sig",
            "format": "anthropic-claude-v1",
            "index": 0,
        }
    ]
    history = [
        user("2+2?"),
        {
            "role": "assistant",
            "content": "4",
            "provider_data": {"openrouter": {"reasoning_details": details}},
        },
        user("and 3+3?"),
    ]

    body = provider.build_request(
        request(history, reasoning=ReasoningConfig(effort="low", exclude=True))
    ).body

    assert body["messages"][1] == {
        "role": "assistant",
        "content": "4",
        "reasoning_details": details,
    }
    assert body["reasoning"] == {"effort": "low", "exclude": True}


async def test_streamed_tool_call_then_text(client, replay):
    call, answer = recordings.cassette("openrouter/chat_stream_tool_call_roundtrip.yaml")
    replay.queue(call.reply(), answer.reply())
    provider = adapter(client, replay, app_url="https://llm.datasette.io/", app_title="LLM")
    history = [user("What is the current llm version?")]

    out = await collect(
        provider, request(history, model="openai/gpt-4.1-mini", tools=[LLM_VERSION])
    )

    [done] = out.calls
    assert (done.id, done.name, done.arguments) == (
        "call_o4OCgtJrNoZTmoCRvmlfoHfj",
        "llm_version",
        "{}",
    )
    assert out.finish.reason == "tool_calls"  # set before the usage chunk, kept after it
    assert out.finish.reported_cost == pytest.approx(0.0000368)

    history += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": done.id,
                    "type": "function",
                    "function": {"name": done.name, "arguments": done.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": done.id, "name": "llm_version", "content": "0.0+test"},
    ]
    out = await collect(
        provider, request(history, model="openai/gpt-4.1-mini", tools=[LLM_VERSION])
    )

    assert out.text.startswith("The current LLM version is")
    first, second = (r.json() for r in replay.requests)
    assert replay.requests[0].headers["http-referer"] == "https://llm.datasette.io/"
    assert replay.requests[0].headers["x-title"] == "LLM"
    ours = ("tool_choice", "usage")  # we also send the tool choice and ask for the cost
    assert without(first, *ours) == call.request_body
    # simonw/llm leaves out the assistant's null content; we send it explicitly.
    assert without(second, *ours, "messages.1.content") == answer.request_body


async def test_429_upstream_rate_limit_keeps_the_upstream_reason(client, replay):
    [recorded] = recordings.cassette("openrouter/error_429_upstream_rate_limited.yaml")
    replay.queue(recorded.reply())

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("joke")]))

    error = caught.value
    assert (error.code, error.status, error.retryable) == ("rate_limit", 429, True)
    assert "temporarily rate-limited upstream" in error.message and "Google" in error.message


async def test_error_chunk_mid_stream_with_status_200(client, replay):
    # Shape from OpenRouter's errors page and WIRE.md (no recorded fixture).
    body = (
        b": OPENROUTER PROCESSING\n\n"
        b'data: {"id":"gen-1","choices":[{"index":0,"delta":{"role":"assistant","content":"Once"},"finish_reason":null}]}\n\n'
        b'data: {"id":"gen-1","error":{"code":502,"message":"Upstream model went away"},'
        b'"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    replay.queue(Reply.sse(body))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("story")]))

    assert (caught.value.code, caught.value.status, caught.value.retryable) == (
        "overloaded",
        502,
        True,
    )


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (401, "authentication", False),
        (402, "rate_limit", False),
        (408, "timeout", True),
        (503, "overloaded", True),
    ],
)
async def test_documented_error_statuses(client, replay, status, code, retryable):
    # Status table from OpenRouter's errors-and-debugging page (no recorded fixture).
    replay.queue(Reply.json({"error": {"code": status, "message": "documented"}}, status))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("x")]))

    assert (caught.value.code, caught.value.retryable) == (code, retryable)
