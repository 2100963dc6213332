"""Gemini adapter against recorded responses replayed over a socket."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from runtime.core.spec import ReasoningConfig
from runtime.providers.base import ToolSchema
from runtime.providers.errors import AdapterError
from runtime.providers.google.provider import GoogleProvider

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import collect, request, user, without
from .replay import ReplayServer, Reply

NO_ARGS = {"additionalProperties": False, "properties": {}, "type": "object"}
TOPIC_TOOLS = [
    ToolSchema("generate_topic", "", NO_ARGS),
    ToolSchema(
        "final_result",
        "The final response which ends this conversation",
        {
            "properties": {"response": {"items": {"type": "string"}, "type": "array"}},
            "required": ["response"],
            "type": "object",
        },
    ),
]


def adapter(client: httpx.AsyncClient, replay: ReplayServer, **kw: object) -> GoogleProvider:
    return GoogleProvider(client, PLANTED_KEY, replay.url + "/v1beta", **kw)  # type: ignore[arg-type]


def as_recorded_by_genai(body: dict[str, Any]) -> dict[str, Any]:
    """Our body in google-genai's dialect, for comparison with its recordings.

    The REST API takes both; the differences are naming only: genai sends
    ``parameters_json_schema`` (snake case), ``systemInstruction.role``,
    ``generationConfig.responseModalities`` and wraps tool results as
    ``{"return_value": …}`` where we follow Google's docs (``{"result": …}``).
    """
    body = json.loads(json.dumps(body))
    for tool in body.get("tools", []):
        for declaration in tool["functionDeclarations"]:
            declaration["parameters_json_schema"] = declaration.pop("parametersJsonSchema")
    if "systemInstruction" in body:
        body["systemInstruction"]["role"] = "user"
    body.setdefault("generationConfig", {})["responseModalities"] = ["TEXT"]
    for content in body["contents"]:
        for part in content["parts"]:
            if "functionResponse" in part:
                response = part["functionResponse"]["response"]
                response["return_value"] = response.pop("result")
    return body


async def test_plain_text_with_thinking_tokens(client, replay):
    [recorded] = recordings.cassette("gemini/generate_text.yaml")
    replay.queue(recorded.reply())

    out = await collect(
        adapter(client, replay, stream=False),
        request([user("Hello!")], model="gemini-2.5-flash", system="You are a chatbot."),
    )

    assert out.text == "Hello! How can I help you today?"
    assert out.finish.reason == "stop"
    usage = out.finish.usage
    # Thoughts are billed as output: 9 candidates + 34 thoughts.
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (9, 43, 34)
    sent = replay.requests[0]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == PLANTED_KEY
    assert "key=" not in sent.path
    assert as_recorded_by_genai(sent.json()) == recorded.request_body


async def test_parallel_function_calls_and_thought_signature_round_trip(client, replay):
    first, second = recordings.cassette("gemini/generate_parallel_function_calls.yaml")
    replay.queue(first.reply(), second.reply())
    provider = adapter(client, replay, stream=False)
    system = "Tell three jokes. Generate topics with the generate_topic tool."
    ask = request(
        [user("")],
        model="gemini-3-flash-preview",
        system=system,
        tools=TOPIC_TOOLS,
        tool_choice="required",
    )

    out = await collect(provider, ask)

    assert [c.name for c in out.calls] == ["generate_topic"] * 3
    assert len({c.id for c in out.calls}) == 3  # ids are made up: AI Studio sends none
    assert out.finish.reason == "tool_calls"  # finishReason STOP + functionCall parts
    signatures = out.finish.provider_data["google"]["call_signatures"]
    assert list(signatures) == [out.calls[0].id]  # only the first call of the batch has one

    # Replay the recorded second request: the recorder's call ids and its url-safe
    # re-encoding of the signature, then one user turn with the three results.
    recorded_model_turn = second.request_body["contents"][1]["parts"]
    ids = [p["functionCall"]["id"] for p in recorded_model_turn]
    history = [
        user(""),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": "generate_topic", "arguments": "{}"},
                }
                for i in ids
            ],
            "provider_data": {
                "google": {"call_signatures": {ids[0]: recorded_model_turn[0]["thoughtSignature"]}}
            },
        },
        *[
            {"role": "tool", "tool_call_id": i, "name": "generate_topic", "content": topic}
            for i, topic in zip(ids, ("cars", "penguins", "cars"), strict=True)
        ],
    ]
    out = await collect(
        provider,
        request(
            history,
            model="gemini-3-flash-preview",
            system=system,
            tools=TOPIC_TOOLS,
            tool_choice="required",
        ),
    )

    assert out.calls and out.finish.provider_data["google"]["call_signatures"]
    # pydantic-ai also lists every tool in allowedFunctionNames for "required".
    ours = as_recorded_by_genai(replay.requests[1].json())
    assert ours == without(
        second.request_body, "toolConfig.functionCallingConfig.allowedFunctionNames"
    )


async def test_thought_parts_are_reasoning_and_answer_signature_is_kept(client, replay):
    [recorded] = recordings.cassette("gemini/generate_thinking.yaml")
    replay.queue(recorded.reply())

    out = await collect(
        adapter(client, replay, stream=False),
        request(
            [user("How do I cross the street?")],
            model="gemini-3-pro-preview",
            reasoning=ReasoningConfig(include=True),
        ),
    )

    assert out.reasoning.startswith("**A Safe Street-Crossing Guide: My Thought Process**")
    assert out.text.startswith("Crossing the street safely is a fundamental skill")
    assert out.finish.provider_data["google"]["text_signature"]
    assert out.finish.usage.reasoning_tokens > 0
    assert replay.requests[0].json()["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True}
    }


async def test_implicit_cache_usage(client, replay):
    [recorded] = recordings.cassette("gemini/generate_implicit_cache_usage.yaml")
    replay.queue(recorded.reply())

    out = await collect(
        adapter(client, replay, stream=False), request([user("Explain")], model="gemini-2.5-flash")
    )

    usage = out.finish.usage
    assert (usage.input_tokens, usage.cached_tokens, usage.output_tokens) == (
        17713,
        17379,
        68 + 821,
    )


async def test_streamed_function_calls_over_two_rounds_then_text(client, replay):
    rounds = recordings.cassette("gemini/stream_function_call_roundtrip.yaml")
    replay.queue(*(r.reply(chunk_size=57) for r in rounds))
    provider = adapter(client, replay)
    tools = [
        ToolSchema(
            "get_capital",
            "Get the capital of a country.",
            {"type": "object", "properties": {"country": {"type": "string"}}},
        ),
        ToolSchema(
            "get_temperature",
            "Get the temperature in a city.",
            {"type": "object", "properties": {"city": {"type": "string"}}},
        ),
    ]
    history: list[dict[str, Any]] = [user("What is the temperature of the capital of France?")]

    for expected_name, result in (("get_capital", "Paris"), ("get_temperature", "30°C")):
        out = await collect(
            provider,
            request(
                history, model="gemini-2.0-flash", system="You are a helpful chatbot.", tools=tools
            ),
        )
        [call] = out.calls
        assert call.name == expected_name and out.finish.reason == "tool_calls"
        history += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result},
        ]
    out = await collect(
        provider,
        request(
            history, model="gemini-2.0-flash", system="You are a helpful chatbot.", tools=tools
        ),
    )

    assert out.text_deltas == ["The temperature in Paris", " is 30°C.\n"]
    assert out.finish.reason == "stop"
    assert out.finish.usage.input_tokens == 79  # the last event's usage, not the first's 169
    assert replay.requests[0].path.endswith(":streamGenerateContent?alt=sse")
    sent = replay.requests[2].json()
    assert [c["role"] for c in sent["contents"]] == ["user", "model", "user", "model", "user"]
    assert sent["contents"][2]["parts"][0]["functionResponse"]["response"] == {"result": "Paris"}


async def test_streamed_call_signature_is_echoed_next_turn(client, replay):
    first, second = recordings.cassette("gemini/stream_function_call_thought_signature.yaml")
    replay.queue(
        Reply.sse(recordings.raw("gemini/stream_function_call_thought_signature.sse"), 101),
        second.reply(),
    )
    provider = adapter(client, replay)
    tool = ToolSchema("get_country", "", NO_ARGS)
    history = [user("What is the capital of the user country? Call the tool")]

    out = await collect(provider, request(history, model="gemini-3-pro-preview", tools=[tool]))

    [call] = out.calls
    signature = out.finish.provider_data["google"]["call_signatures"][call.id]
    assert signature.startswith("EpwICpkIAXLI2nxlU6gsWZaZHRYkX1or")
    assert out.finish.reason == "tool_calls"
    history += [
        {
            "role": "assistant",
            "content": None,
            "provider_data": out.finish.provider_data,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": "Mexico"},
    ]
    out = await collect(provider, request(history, model="gemini-3-pro-preview", tools=[tool]))

    assert out.text == "The capital of Mexico is Mexico City."
    sent = replay.requests[1].json()
    assert sent["contents"][1]["parts"][0]["thoughtSignature"] == signature
    # Same request as recorded once ids and the url-safe re-encoding are aligned.
    recorded = json.loads(json.dumps(second.request_body))
    recorded_call = recorded["contents"][1]["parts"][0]
    recorded_call["thoughtSignature"] = signature
    recorded_call["functionCall"]["id"] = call.id
    recorded["contents"][2]["parts"][0]["functionResponse"]["id"] = call.id
    assert as_recorded_by_genai(sent) == recorded
    assert first.request_body["contents"] == replay.requests[0].json()["contents"]


# --- errors ------------------------------------------------------------------------------------


async def test_404_model_not_found(client, replay):
    [recorded] = recordings.cassette("gemini/error_404_model_not_found.yaml")
    replay.queue(recorded.reply())

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("hello")], model="gemini-3.6-flahs"))

    assert (caught.value.code, caught.value.status, caught.value.retryable) == (
        "invalid_request",
        404,
        False,
    )
    assert caught.value.vendor_code == "NOT_FOUND"


async def test_429_retry_delay_comes_from_the_body(client, replay):
    replay.queue(
        Reply(
            429,
            {"content-type": "application/json"},
            recordings.raw("gemini/error_429_resource_exhausted.json"),
        )
    )

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("hello")]))

    assert (caught.value.code, caught.value.retryable, caught.value.retry_after) == (
        "rate_limit",
        True,
        34.4,
    )


@pytest.mark.parametrize(
    ("status", "error", "code", "retryable"),
    [
        # From Google's troubleshooting page as quoted in WIRE.md (no recorded fixture):
        (
            400,
            {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                    }
                ],
            },
            "authentication",
            False,
        ),
        (
            503,
            {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"},
            "overloaded",
            True,
        ),
        (500, {"code": 500, "message": "Internal error", "status": "INTERNAL"}, "unknown", True),
        (
            400,
            {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            },
            "context_too_long",
            False,
        ),
    ],
)
async def test_error_classes(client, replay, status, error, code, retryable):
    replay.queue(Reply.json({"error": error}, status))

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("hello")]))

    assert (caught.value.code, caught.value.retryable) == (code, retryable)


async def test_stream_without_finish_reason_is_incomplete(client, replay):
    rounds = recordings.cassette("gemini/stream_function_call_roundtrip.yaml")
    body = rounds[2].body
    replay.queue(Reply.sse(body[: body.index(b"data:", 10)]))  # only the first event

    with pytest.raises(AdapterError) as caught:
        await collect(adapter(client, replay), request([user("hi")]))

    assert "finishReason" in caught.value.message and caught.value.code == "network"


def test_request_shape_for_choices_images_and_reasoning():
    provider = GoogleProvider(httpx.AsyncClient(), PLANTED_KEY)
    built = provider.build_request(
        request(
            [
                user(
                    [
                        {"type": "text", "text": "what is this"},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"},
                        },
                    ]
                )
            ],
            model="gemini-2.5-pro",
            tools=[ToolSchema("generate_topic", "", NO_ARGS)],
            tool_choice={"name": "generate_topic"},
            reasoning=ReasoningConfig(effort="medium", exclude=True),
        )
    )
    assert built.url.endswith("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
    body = built.body
    assert body["contents"][0]["parts"][1] == {
        "inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}
    }
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["generate_topic"]}
    }
    assert body["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 4096,
        "includeThoughts": False,
    }
    gemini3 = provider.build_request(
        request([user("x")], model="gemini-3-pro-preview", reasoning=ReasoningConfig(effort="high"))
    ).body
    assert gemini3["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "high",
        "includeThoughts": True,
    }
