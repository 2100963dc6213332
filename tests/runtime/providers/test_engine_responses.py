"""The engine over the OpenAI Responses adapter (``api: "responses"``): a tool loop whose
encrypted reasoning goes back on the next step, usage and cost on the log, a fallback from
a failing Responses model to a Chat one, user images, and a generated image stored as a
thread file and sent back on the next turn."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from runtime.core.spec import ModelCapabilities, ModelDefinition, ReasoningConfig
from runtime.engine import NewMessage
from runtime.providers.pricing import thread_cost
from runtime.providers.registry import KEY_NAMES, install
from runtime.store.protocol import LogQuery, LogRecord
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY
from .replay import Reply
from .responses_support import jsonl_stream
from .test_engine_wiring import get_weather
from .test_images import _attach

ENCRYPTED = "gAAAAABo-encrypted-reasoning-for-the-test"


def _model(replay: Any, name: str = "m", api: str | None = "responses", **kw: Any):
    kw.setdefault("model", "gpt-5-mini")
    return ModelDefinition(name=name, provider="openai", base_url=replay.url + "/v1", api=api, **kw)


def _sse(*events: dict[str, Any]) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply.sse(body.encode(), 67)


def _completed(output: list[dict[str, Any]], usage: dict[str, Any]) -> dict[str, Any]:
    response = {"id": "resp_1", "model": "gpt-5-mini-2025-08-07", "status": "completed"}
    return {
        "type": "response.completed",
        "response": {**response, "output": output, "usage": usage},
    }


REASONING = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": ENCRYPTED}
CALL = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
}
USAGE = {
    "input_tokens": 1000,
    "input_tokens_details": {"cached_tokens": 400},
    "output_tokens": 200,
    "output_tokens_details": {"reasoning_tokens": 150},
}


def _tool_step() -> Reply:
    summary = "The user wants the weather; call the tool."
    return _sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**REASONING, "encrypted_content": None},
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": summary[:9],
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": summary[9:],
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**REASONING, "summary": [{"type": "summary_text", "text": summary}]},
        },
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**CALL, "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"city": '},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '"Paris"}'},
        {"type": "response.output_item.done", "output_index": 1, "item": CALL},
        _completed([REASONING, CALL], USAGE),
    )


def _answer_step(text: str = "Sunny in Paris.") -> Reply:
    message = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {"input_tokens": 1300, "output_tokens": 10}
    return _sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "content": []},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_2",
            "content_index": 0,
            "delta": text[:5],
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_2",
            "content_index": 0,
            "delta": text[5:],
        },
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        _completed([message], usage),
    )


async def _logs(world: World, thread_id: str) -> list[LogRecord]:
    return await world.store.list_logs(thread_id, LogQuery(limit=None, kind="llm"))


async def test_spec_provider_metadata_must_round_trip_encrypted_reasoning_in_a_tool_loop(
    world: World, replay, client
):
    replay.queue(_tool_step(), _answer_step())
    install(world.providers, client, environ={"OPENAI_API_KEY": PLANTED_KEY})
    world.register(get_weather)
    world.define(
        _model(replay, input_price=1.0, output_price=8.0, cached_price=0.1),
        prompt(tools=["get_weather"], reasoning=ReasoningConfig(effort="low")),
        agent(),
    )

    thread, result = await world.chat("Weather in Paris?")

    assert result.final_text == "Sunny in Paris."
    assert [r.path for r in replay.requests] == ["/v1/responses"] * 2
    asked = next(m for m in await world.messages(thread.id) if m.tool_calls)
    assert asked.reasoning_content == "The user wants the weather; call the tool."
    items = asked.metadata["provider_data"]["openai"]["items"]
    assert items[0]["encrypted_content"] == ENCRYPTED
    first, second = (r.json() for r in replay.requests)
    assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    sent = second["input"]
    assert [i.get("type", i.get("role")) for i in sent] == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert sent[1] == {
        **REASONING,
        "summary": [{"type": "summary_text", "text": asked.reasoning_content}],
    }
    assert sent[2] == {k: CALL[k] for k in ("type", "id", "call_id", "name", "arguments")}
    assert sent[3] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "Sunny in Paris",
    }
    tool_log, answer_log = await _logs(world, thread.id)
    assert tool_log.request_body is not None and tool_log.request_body["body"] == first
    assert answer_log.request_body is not None and answer_log.request_body["body"] == second
    assert (tool_log.input_tokens, tool_log.output_tokens) == (1000, 200)
    # 600 uncached at 1.0, 400 cached at 0.1, 200 output (reasoning included) at 8.0, per million.
    assert tool_log.cost_total == pytest.approx((600 * 1.0 + 400 * 0.1 + 200 * 8.0) / 1_000_000)
    assert await thread_cost(world.store, thread.id) == pytest.approx(
        tool_log.cost_total + answer_log.cost_total
    )


async def test_a_model_without_api_keeps_chat_completions(world: World, replay, client):
    _, answer = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")
    replay.queue(answer.reply())
    install(world.providers, client, environ={"OPENAI_API_KEY": PLANTED_KEY})
    world.define(_model(replay, api=None, model="gpt-4o-mini"), prompt(), agent())

    _, result = await world.chat("hi")

    assert result.final_text and [r.path for r in replay.requests] == ["/v1/chat/completions"]


async def test_a_failing_responses_model_falls_back_to_a_chat_model(world: World, replay, client):
    _, answer = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")
    replay.queue(jsonl_stream("openai/responses_stream_error.chunks.jsonl"), answer.reply())
    install(world.providers, client, environ={"OPENAI_API_KEY": PLANTED_KEY})
    world.define(
        _model(replay, fallbacks=["chat"]),
        _model(replay, name="chat", api="chat", model="gpt-4o-mini"),
        prompt(),
        agent(),
    )

    thread, result = await world.chat("hi")

    assert result.stop_reason == "stop_on_response" and result.final_text
    # insufficient_quota is not retryable: one attempt, then the fallback.
    assert [r.path for r in replay.requests] == ["/v1/responses", "/v1/chat/completions"]
    logs = await _logs(world, thread.id)
    assert [(log.model, log.attempt, log.error_type) for log in logs] == [
        ("m", 1, "rate_limit"),
        ("chat", 2, ""),
    ]
    frames = world.sink.of_type(thread.id, "fallback_triggered")
    assert [(f["from"], f["to"]) for f in frames] == [("m", "chat")]


def _user_input(body: dict[str, Any]) -> list[dict[str, Any]]:
    return next(i for i in body["input"] if i.get("role") == "user")["content"]


async def test_a_user_image_reaches_the_responses_api_as_input_image(world: World, replay, client):
    [recorded] = recordings.cassette("openai/responses_nonstream_image_input_data_url.yaml")
    recorded_parts = recorded.request_body["input"][0]["content"]
    url = recorded_parts[1]["image_url"]
    data = base64.b64decode(url.split(",", 1)[1])
    replay.queue(recorded.reply())
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY}, stream=False)
    world.define(_model(replay, model="gpt-4.1-nano"), prompt(), agent())
    thread = await world.thread()
    ref = await _attach(world, thread.id, "image/jpeg", data, "potato.jpg")

    await world.engine.run_session(
        thread.id, message=NewMessage(recorded_parts[0]["text"], attachments=[ref])
    )

    assert _user_input(replay.requests[0].json()) == recorded_parts  # same shape, same bytes
    assert (await world.messages(thread.id))[-1].content == "This is a potato."
    [log] = await _logs(world, thread.id)
    logged = json.dumps(log.request_body)
    assert url.split(",", 1)[1][:200] not in logged and "[base64: " in logged


async def test_a_model_without_vision_gets_the_placeholder_on_responses(
    world: World, replay, client
):
    [recorded] = recordings.cassette("openai/responses_nonstream_image_input_data_url.yaml")
    url = recorded.request_body["input"][0]["content"][1]["image_url"]
    replay.queue(recorded.reply())
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY}, stream=False)
    blind = _model(replay, model="gpt-4.1-nano", capabilities=ModelCapabilities(vision=False))
    world.define(blind, prompt(), agent())
    thread = await world.thread()
    ref = await _attach(
        world, thread.id, "image/jpeg", base64.b64decode(url.split(",", 1)[1]), "potato.jpg"
    )

    await world.engine.run_session(
        thread.id, message=NewMessage("What is this?", attachments=[ref])
    )

    parts = _user_input(replay.requests[0].json())
    assert all(p["type"] == "input_text" for p in parts)
    assert any("potato.jpg" in p["text"] and "vision" in p["text"] for p in parts)


async def test_a_generated_image_is_stored_and_goes_back_in_its_call(world: World, replay, client):
    [generated] = recordings.cassette("openai/responses_nonstream_image_generation.yaml")
    [text] = recordings.cassette("openai/responses_nonstream_text.yaml")
    replay.queue(generated.reply(), text.reply())
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY}, stream=False)
    world.define(_model(replay, model="gpt-5"), prompt(), agent())
    result_b64 = generated.response_json()["output"][1]["result"]

    thread, _ = await world.chat("Generate an image of axolotl.")
    await world.run(thread.id, "Thanks")

    answer = (await world.messages(thread.id))[1]
    [ref] = answer.attachments
    assert ref["generated"] is True and ref["mimeType"] == "image/jpeg"
    assert await world.store.read_file(thread.id, ref["path"]) == base64.b64decode(result_b64)
    assert ref["description"].startswith("Photorealistic close-up")
    sent = replay.requests[1].json()["input"]
    assert [i.get("type", i.get("role")) for i in sent] == [
        "user",
        "reasoning",
        "image_generation_call",
        "message",
        "user",
    ]
    assert sent[2]["result"] == result_b64 and sent[2]["id"].startswith("ig_")
    [_, second_log] = await _logs(world, thread.id)
    assert result_b64[:200] not in json.dumps(second_log.request_body)


async def test_a_tool_image_goes_back_inside_function_call_output(world: World, replay, client):
    from .test_images import _image_tool

    first, second = recordings.cassette(
        "openai/responses_nonstream_function_call_output_image.yaml"
    )
    recorded = second.request_body["input"]
    url = recorded[3]["output"][0]["image_url"]
    data = base64.b64decode(url.split(",", 1)[1])
    replay.queue(first.reply(), second.reply())
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY}, stream=False)
    world.register(_image_tool("get_file", "image/jpeg", data))
    world.define(_model(replay), prompt(tools=["get_file"]), agent())

    thread, result = await world.chat(recorded[0]["content"])

    assert result.stop_reason == "stop_on_response"
    sent = replay.requests[1].json()["input"]
    # The reasoning item and the call with its item id as recorded; the output carries the
    # engine's text about the tool's attachment, then the image as recorded.
    assert sent[1:3] == recorded[1:3]
    output = sent[3]["output"]
    assert [p["type"] for p in output] == ["input_text", "input_image"]
    assert output[1] == recorded[3]["output"][0]
    rows = await world.messages(thread.id)
    assert rows[-1].content.startswith("I used the get_file tool")


async def test_spec_provider_executed_tools_must_not_be_re_executed_locally(
    world: World, replay, client
):
    [recorded] = recordings.cassette("openai/responses_nonstream_web_search_citations.yaml")
    replay.queue(recorded.reply())
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY}, stream=False)
    world.define(_model(replay, model="gpt-5.2"), prompt(), agent())

    thread, result = await world.chat(recorded.request_body["input"][0]["content"])

    # The vendor's web search is a record, not a call for the engine: one request, no tool
    # rows, no tool calls on the answer.
    assert result.stop_reason == "stop_on_response" and len(replay.requests) == 1
    rows = await world.messages(thread.id)
    assert [m.role for m in rows] == ["user", "assistant"]
    assert not rows[-1].tool_calls and rows[-1].content.startswith("The tallest mountain")
    items = rows[-1].metadata["provider_data"]["openai"]["items"]
    assert [i["type"] for i in items] == ["web_search_call", "message"]


async def test_structured_output_goes_as_text_format_through_the_engine(
    world: World, replay, client
):
    from .test_structured_output_replay import get_user_country

    interactions = recordings.cassette("openai/responses_nonstream_json_schema_output.yaml")
    recorded = interactions[0].request_body["text"]["format"]
    replay.queue(*(i.reply() for i in interactions))
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY}, stream=False)
    world.register(get_user_country)
    schema = {**recorded["schema"], "title": recorded["name"]}
    world.define(
        _model(replay, model="gpt-4o"),
        prompt(tools=["get_user_country"], response_schema=schema),
        agent(),
    )

    thread, result = await world.chat("What is the largest city in the user country?")

    assert result.stop_reason == "stop_on_response" and len(replay.requests) == 2
    for sent in replay.requests:
        assert sent.json()["text"]["format"] == {**recorded, "schema": schema}
    final = (await world.messages(thread.id))[-1]
    assert final.status == "completed"
    assert json.loads(final.content or "") == {"city": "Mexico City", "country": "Mexico"}
