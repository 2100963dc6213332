"""Images and documents to each vendor, replayed from the recorded fixtures.

User attachments go through the whole engine (memory store → history → media
resolution → adapter → a real local HTTP server answering with the recorded
response); the request each adapter sends must have the recorded request's shape
and carry the same bytes. Tool results with images are checked at the adapter
(the recorded conversations call tools our registry does not have).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from runtime.core.spec import ModelCapabilities, ModelDefinition
from runtime.engine import NewMessage
from runtime.providers.anthropic.provider import AnthropicProvider
from runtime.providers.google.provider import GoogleProvider
from runtime.providers.openai.chat_completions import OpenAIProvider
from runtime.providers.openrouter.provider import OpenRouterProvider
from runtime.providers.registry import KEY_NAMES, install
from runtime.store.protocol import LogQuery
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import collect, request
from .media_fixtures import dimensions, media_in, shape

# vendor, cassette, path prefix, model id, index of the user message in the recorded body
INPUT_CASES = {
    "openai-image": (
        "openai",
        "openai/chat_nonstream_image_input_data_url.yaml",
        "/v1",
        "gpt-4.1-nano",
    ),
    "openai-pdf": ("openai", "openai/chat_nonstream_pdf_file_input.yaml", "/v1", "gpt-4o"),
    "openrouter-image": (
        "openrouter",
        "openrouter/chat_nonstream_image_input_data_url.yaml",
        "/api/v1",
        "anthropic/claude-sonnet-4",
    ),
    "openrouter-pdf": (
        "openrouter",
        "openrouter/chat_nonstream_pdf_file_annotations.yaml",
        "/api/v1",
        "openai/gpt-4o",
    ),
    "anthropic-image": (
        "anthropic",
        "anthropic/messages_stream_image_input_base64.yaml",
        "/v1",
        "claude-sonnet-4-5",
    ),
    "anthropic-pdf": (
        "anthropic",
        "anthropic/messages_nonstream_pdf_document_base64.yaml",
        "/v1",
        "claude-sonnet-4-5",
    ),
    "google-image": (
        "google",
        "gemini/generate_image_input_inline_data.yaml",
        "/v1beta",
        "gemini-2.0-flash",
    ),
    "google-pdf": ("google", "gemini/generate_pdf_inline_data.yaml", "/v1beta", "gemini-2.0-flash"),
}

EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "application/pdf": "pdf"}


def _user_turn(vendor: str, body: dict[str, Any]) -> dict[str, Any]:
    turns = body["contents"] if vendor == "google" else body["messages"]
    return next(t for t in turns if t.get("role") == "user")


def _text_in(turn: dict[str, Any]) -> str:
    parts = turn.get("parts") or turn.get("content")
    if isinstance(parts, str):
        return parts
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict))


def _normalized(turn: dict[str, Any]) -> list[str]:
    """The parts of a user turn, shape only, in a stable order (vendors accept either order)."""
    parts = turn.get("parts") or turn.get("content")
    return sorted(json.dumps(shape(p), sort_keys=True) for p in parts)


def _final_text(vendor: str, interaction: recordings.Interaction) -> str:
    if interaction.is_stream:  # Anthropic's streamed text
        text = ""
        for line in interaction.body.decode().splitlines():
            if line.startswith("data:") and '"text_delta"' in line:
                text += json.loads(line[5:])["delta"]["text"]
        return text
    payload = interaction.response_json()
    if vendor == "google":
        return "".join(p.get("text", "") for p in payload["candidates"][0]["content"]["parts"])
    if vendor == "anthropic":
        return "".join(b.get("text", "") for b in payload["content"] if b["type"] == "text")
    return payload["choices"][0]["message"]["content"]


def _model(vendor: str, model_id: str, base_url: str, **options: Any) -> ModelDefinition:
    return ModelDefinition(name="m", provider=vendor, model=model_id, base_url=base_url, **options)  # type: ignore[arg-type]


async def _attach(
    world: World, thread_id: str, mime: str, data: bytes, name: str
) -> dict[str, Any]:
    size = dimensions(data)
    path = f"/attachments/{name}"
    await world.store.write_file(
        thread_id,
        path,
        data,
        mime,
        width=size[0] if size else None,
        height=size[1] if size else None,
    )
    ref: dict[str, Any] = {"id": path, "type": "file", "path": path, "name": name, "mimeType": mime}
    ref["size"] = len(data)
    if size:
        ref["width"], ref["height"] = size
    return ref


@pytest.mark.parametrize("case", list(INPUT_CASES))
async def test_an_attachment_reaches_the_vendor_as_the_recording_shows(
    world: World, replay, client, case
):
    vendor, cassette, prefix, model_id = INPUT_CASES[case]
    interaction = recordings.cassette(cassette)[0]
    recorded_turn = _user_turn(vendor, interaction.request_body)
    [(mime, data)] = media_in(recorded_turn)
    replay.queue(interaction.reply())
    install(
        world.providers,
        client,
        environ={KEY_NAMES[vendor]: PLANTED_KEY},
        stream=interaction.is_stream,
    )
    world.define(
        _model(vendor, model_id, replay.url + prefix),
        prompt(text="You are a helpful chatbot."),
        agent(),
    )
    thread = await world.thread()
    ref = await _attach(world, thread.id, mime, data, f"upload.{EXTENSIONS[mime]}")
    text = _text_in(recorded_turn)

    await world.engine.run_session(thread.id, message=NewMessage(text, attachments=[ref]))

    sent = replay.requests[0].json()
    sent_turn = _user_turn(vendor, sent)
    assert media_in(sent_turn) == [(mime, data)]  # the same bytes, in the vendor's own form
    if vendor == "openai" and mime == "application/pdf":
        recorded_turn["content"][1]["file"]["filename"] = "upload.pdf"  # the name we gave it
    if vendor == "openrouter" and mime == "application/pdf":
        recorded_turn["content"][1]["file"]["filename"] = "upload.pdf"
    assert _normalized(sent_turn) == _normalized(recorded_turn)
    rows = await world.messages(thread.id)
    assert rows[-1].role == "assistant" and rows[-1].content == _final_text(vendor, interaction)
    # The log keeps the request without the base64 payload (a size note instead).
    [log] = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    logged = json.dumps(log.request_body)
    assert base64.b64encode(data).decode()[:200] not in logged
    assert "[base64: " in logged


async def test_a_model_without_vision_gets_a_placeholder_naming_the_file(
    world: World, replay, client
):
    interaction = recordings.cassette("openai/chat_nonstream_image_input_data_url.yaml")[0]
    [(mime, data)] = media_in(interaction.request_body)
    replay.queue(interaction.reply())
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY}, stream=False)
    blind = _model(
        "openai", "gpt-3.5-turbo", replay.url + "/v1", capabilities=ModelCapabilities(vision=False)
    )
    world.define(blind, prompt(), agent())
    thread = await world.thread()
    ref = await _attach(world, thread.id, mime, data, "potato.jpg")

    await world.engine.run_session(
        thread.id, message=NewMessage("What is this?", attachments=[ref])
    )

    sent = replay.requests[0].json()
    assert media_in(sent) == []
    content = sent["messages"][-1]["content"]
    assert {"type": "text", "text": "What is this?"} in content
    assert any("potato.jpg" in p.get("text", "") and "vision" in p["text"] for p in content)


# --- tool results with images (adapter level) ----------------------------------------------


def _tool_history(
    call_id: str, name: str, text: str, image: dict[str, Any]
) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": call_id,
            "name": name,
            "content": [{"type": "text", "text": text}, image],
        },
    ]


def _image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}, "attachment": {"name": "tool.jpg"}}


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


async def test_chat_completions_sends_tool_images_in_a_follow_up_user_message(replay, client):
    interaction = recordings.cassette("openai/chat_nonstream_tool_image_followup_user.yaml")[1]
    recorded = interaction.request_body["messages"]
    call_id = recorded[1]["tool_calls"][0]["id"]
    url = recorded[3]["content"][1]["image_url"]["url"]  # an https image in this recording
    history = [
        {"role": "user", "content": recorded[0]["content"][0]["text"]},
        *_tool_history(call_id, "get_image", "See file bd38f5", _image_part(url)),
    ]
    replay.queue(interaction.reply())
    provider = OpenAIProvider(client, PLANTED_KEY, replay.url + "/v1", stream=False)

    out = await collect(provider, request(history, model="gpt-4o"))

    sent = replay.requests[0].json()["messages"]
    assert [m["role"] for m in sent] == [m["role"] for m in recorded]
    assert sent[2] == recorded[2]  # the tool message keeps only the text
    assert sent[3]["content"][1] == recorded[3]["content"][1]
    assert sent[3]["content"][0]["text"] == f"Attachments from tool call {call_id}:"
    assert out.text == "The image shows a potato."


async def test_openrouter_tool_images_follow_as_the_recording_shows(replay, client):
    interaction = recordings.cassette("openrouter/chat_nonstream_tool_image_followup_user.yaml")[1]
    recorded = interaction.request_body["messages"]
    call_id = recorded[2]["tool_call_id"]
    [(mime, data)] = media_in(recorded[3])
    history = [
        {"role": "user", "content": recorded[0]["content"]},
        *_tool_history(
            call_id, "image_fetch", recorded[2]["content"], _image_part(_data_url(mime, data))
        ),
    ]
    replay.queue(interaction.reply())
    provider = OpenRouterProvider(client, PLANTED_KEY, replay.url + "/api/v1", stream=False)

    out = await collect(provider, request(history, model="google/gemini-2.5-flash"))

    sent = replay.requests[0].json()["messages"]
    assert sent[2] == recorded[2]
    assert sent[3] == recorded[3]  # text "Attachments from tool call …:" and the PNG, as recorded
    assert out.text.startswith("The image displays")


async def test_anthropic_tool_result_carries_the_image_block(replay, client):
    interaction = recordings.cassette("anthropic/messages_nonstream_tool_result_image.yaml")[1]
    recorded = interaction.request_body["messages"]
    result = recorded[2]["content"][0]
    [(mime, data)] = media_in(result)
    call_id = result["tool_use_id"]
    history = [
        {"role": "user", "content": recorded[0]["content"][0]["text"]},
        *_tool_history(call_id, "get_file", "", _image_part(_data_url(mime, data))),
    ]
    history[0]["content"] = recorded[0]["content"][0]["text"]
    replay.queue(interaction.reply())
    provider = AnthropicProvider(client, PLANTED_KEY, replay.url + "/v1", stream=False)

    out = await collect(
        provider, request(history, model="claude-sonnet-4-5", max_output_tokens=4096)
    )

    sent = replay.requests[0].json()["messages"]
    assert sent[2]["content"][0] == result  # [{type: image, source: base64}] inside tool_result
    assert "kiwi" in out.text


async def test_gemini_function_response_carries_the_image_in_its_parts(replay, client):
    interaction = recordings.cassette("gemini/generate_function_response_image_parts.yaml")[-1]
    recorded = interaction.request_body["contents"]
    response = recorded[-1]["parts"][0]["functionResponse"]
    [(mime, data)] = media_in(response)
    history = _tool_history(response["id"], "get_file", "", _image_part(_data_url(mime, data)))
    history.insert(0, {"role": "user", "content": recorded[0]["parts"][0]["text"]})
    replay.queue(interaction.reply())
    provider = GoogleProvider(client, PLANTED_KEY, replay.url + "/v1beta", stream=False)

    out = await collect(provider, request(history, model="gemini-3-flash-preview"))

    sent = replay.requests[0].json()["contents"][-1]["parts"][0]["functionResponse"]
    assert shape(sent) == shape(response)
    assert media_in(sent) == [(mime, data)]
    assert "image" in out.text


# --- tool images through the engine ---------------------------------------------------------


def _image_tool(name: str, mime: str, data: bytes) -> Any:
    from runtime.tools.registry import define_tool

    @define_tool("Fetches the requested image", name=name)
    async def fetch(state: Any) -> dict[str, Any]:
        encoded = base64.b64encode(data).decode()
        return {"content": [{"type": "image", "data": encoded, "mimeType": mime}]}

    return fetch


@pytest.mark.parametrize(
    "vendor, cassette, prefix, model_id, tool",
    [
        (
            "anthropic",
            "anthropic/messages_nonstream_tool_result_image.yaml",
            "/v1",
            "claude-sonnet-4-5",
            "get_file",
        ),
        (
            "openrouter",
            "openrouter/chat_nonstream_tool_image_followup_user.yaml",
            "/api/v1",
            "google/gemini-2.5-flash",
            "image_fetch",
        ),
    ],
)
async def test_a_tool_image_goes_back_to_the_vendor_through_the_engine(
    world: World, replay, client, vendor, cassette, prefix, model_id, tool
):
    first, second = recordings.cassette(cassette)
    [(mime, data)] = media_in(second.request_body["messages"][2:])
    replay.queue(first.reply(), second.reply())
    install(world.providers, client, environ={KEY_NAMES[vendor]: PLANTED_KEY}, stream=False)
    world.register(_image_tool(tool, mime, data))
    world.define(_model(vendor, model_id, replay.url + prefix), prompt(tools=[tool]), agent())

    thread, result = await world.chat("Use the tool, then describe the image.")

    assert result.stop_reason == "stop_on_response"
    sent = replay.requests[1].json()["messages"]
    recorded = second.request_body["messages"]
    assert media_in(sent) == [(mime, data)]  # the tool's image, once, with its bytes
    if vendor == "anthropic":
        result_block = sent[2]["content"][0]
        assert result_block["type"] == "tool_result" and not result_block["is_error"]
        assert result_block["content"][-1] == recorded[2]["content"][0]["content"][0]
    else:
        # (we also send the prompt as a system message first)
        assert [m["role"] for m in sent[-3:]] == [m["role"] for m in recorded[-3:]]
        assert sent[-1]["content"][1] == recorded[-1]["content"][1]
        call_id = sent[-2]["tool_call_id"]
        assert sent[-1]["content"][0]["text"] == f"Attachments from tool call {call_id}:"
    rows = await world.messages(thread.id)
    tool_row = next(m for m in rows if m.role == "tool")
    assert tool_row.attachments and tool_row.attachments[0]["mimeType"] == mime
    assert rows[-1].content == _final_text(vendor, second)


async def test_a_tool_image_goes_back_to_gemini_in_function_response_parts(
    world: World, replay, client
):
    interactions = recordings.cassette("gemini/generate_function_response_image_parts.yaml")
    recorded = interactions[-1].request_body["contents"][-1]["parts"][0]["functionResponse"]
    [(mime, data)] = media_in(recorded)
    replay.queue(*(i.reply() for i in interactions))
    install(world.providers, client, environ={KEY_NAMES["google"]: PLANTED_KEY}, stream=False)
    world.register(_image_tool("get_file", mime, data))
    world.define(
        _model("google", "gemini-3-flash-preview", replay.url + "/v1beta"),
        prompt(tools=["get_file"]),
        agent(),
    )

    thread, result = await world.chat("Use the get_file tool now to retrieve a image file.")

    # The recorded model first calls a tool that does not exist (an error here too), then
    # get_file with an argument it does not take (an error in the recording; our tool ignores
    # it and answers), then get_file again: every answer goes back in order.
    assert result.stop_reason == "stop_on_response" and len(replay.requests) == len(interactions)
    sent = replay.requests[-1].json()["contents"][-1]["parts"][0]["functionResponse"]
    assert sent["name"] == "get_file" and media_in(sent) == [(mime, data)]
    assert shape(sent["parts"]) == shape(recorded["parts"])
    rows = await world.messages(thread.id)
    assert [m.tool_status for m in rows if m.role == "tool"] == ["error", "success", "success"]
    assert rows[-1].content == _final_text("google", interactions[-1])
