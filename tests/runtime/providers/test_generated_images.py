"""Images a model generates: stored as thread files, attached to the assistant message,
streamed as they arrive, and (Gemini) echoed back with their ``thoughtSignature``.

The Gemini recordings' image payloads were TRIMMED when the fixtures were collected
(they no longer decode, INDEX.md); the tests put a real image in their place and keep
everything else as recorded. OpenRouter's chat ``message.images`` has no recording
(INDEX.md "not found"): those bodies follow its documented shape on top of a recorded
chat completion.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from runtime.core.spec import ModelDefinition
from runtime.providers.base import ImageDelta
from runtime.providers.openrouter.provider import OpenRouterProvider
from runtime.providers.registry import KEY_NAMES, install
from runtime.store.protocol import LogQuery
from tests.runtime.conftest import World, agent, prompt

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import collect, request, user
from .media_fixtures import png
from .replay import Reply

PICTURE = png(96, 64, (20, 160, 90))


def _gemini_reply(name: str, image: bytes | None) -> tuple[Reply, dict[str, Any]]:
    interaction = recordings.cassette(name)[0]
    payload = copy.deepcopy(interaction.response_json())
    if image is not None:
        for part in payload["candidates"][0]["content"]["parts"]:
            if "inlineData" in part:
                part["inlineData"] = {
                    "mimeType": "image/png",
                    "data": base64.b64encode(image).decode(),
                }
    return Reply.json(payload), payload


def _google(world: World, replay, client) -> None:
    install(world.providers, client, environ={KEY_NAMES["google"]: PLANTED_KEY}, stream=False)
    world.define(
        ModelDefinition(
            name="m",
            provider="google",
            model="gemini-3-pro-image-preview",
            base_url=replay.url + "/v1beta",
        ),
        prompt(),
        agent(),
    )


async def test_a_gemini_image_is_stored_attached_and_announced_before_the_message_completes(
    world: World, replay, client
):
    reply, payload = _gemini_reply("gemini/generate_image_output_thought_signatures.yaml", PICTURE)
    replay.queue(reply)
    _google(world, replay, client)

    thread, result = await world.chat(
        "Generate an illustrated two-sentence story about an axolotl."
    )

    assert result.stop_reason == "stop_on_response"
    answer = (await world.messages(thread.id))[-1]
    [ref] = answer.attachments
    assert ref["generated"] is True and ref["mimeType"] == "image/png"
    assert (ref["width"], ref["height"]) == (96, 64)
    assert await world.store.read_file(thread.id, ref["path"]) == PICTURE
    assert answer.content.startswith("A little axolotl named Archie")
    frames = world.sink.frames[thread.id]
    shown = next(i for i, f in enumerate(frames) if f["type"] == "message_image")
    completed = next(
        i
        for i, f in enumerate(frames)
        if f["type"] == "message_data"
        and f["message_id"] == answer.id
        and f["data"]["status"] == "completed"
    )
    assert shown < completed and frames[shown]["attachment"]["path"] == ref["path"]
    # The image part's signature is kept to be echoed on the next turn.
    signature = payload["candidates"][0]["content"]["parts"][1]["thoughtSignature"]
    assert answer.metadata["provider_data"]["google"]["image_signatures"] == [signature]


async def test_gemini_gets_its_generated_image_back_with_the_thought_signature(
    world: World, replay, client
):
    reply, payload = _gemini_reply("gemini/generate_image_output_thought_signatures.yaml", PICTURE)
    text_reply = recordings.cassette("gemini/generate_text.yaml")[0].reply()
    replay.queue(reply, text_reply)
    _google(world, replay, client)
    thread, _ = await world.chat("Draw an axolotl.")

    await world.run(thread.id, "Now describe it.")

    parts = replay.requests[1].json()["contents"][1]["parts"]
    recorded = payload["candidates"][0]["content"]["parts"]
    assert parts[0]["thoughtSignature"] == recorded[0]["thoughtSignature"]
    assert parts[1] == {
        "inlineData": {"mimeType": "image/png", "data": base64.b64encode(PICTURE).decode()},
        "thoughtSignature": recorded[1]["thoughtSignature"],
    }
    # The log of that request notes the image's size instead of holding it.
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    logged = json.dumps(logs[-1].request_body)
    assert base64.b64encode(PICTURE).decode() not in logged and "[base64: " in logged


async def test_an_image_that_does_not_decode_is_reported_and_the_text_kept(
    world: World, replay, client
):
    reply, _ = _gemini_reply("gemini/generate_image_output.yaml", None)  # the TRIMMED payload
    replay.queue(reply)
    _google(world, replay, client)

    thread, result = await world.chat("Tell me a story with an illustration.")

    answer = (await world.messages(thread.id))[-1]
    assert result.stop_reason == "stop_on_response"
    assert answer.content.startswith("Once, in a hidden cenote")
    assert not answer.attachments
    assert answer.metadata["image_errors"] == [
        "generated-1.png: the image data is not valid base64"
    ]


def _openrouter_completion(images: list[dict[str, Any]]) -> dict[str, Any]:
    body = recordings.cassette("openrouter/chat_nonstream_tool_call.yaml")[0].response_json()
    message = body["choices"][0]["message"]
    message.pop("tool_calls", None)
    message["content"] = "Here is your picture."
    message["images"] = images
    body["choices"][0]["finish_reason"] = "stop"
    return body


async def test_openrouter_message_images_become_image_events(replay, client):
    url = "data:image/png;base64," + base64.b64encode(PICTURE).decode()
    replay.queue(
        Reply.json(_openrouter_completion([{"type": "image_url", "image_url": {"url": url}}]))
    )
    provider = OpenRouterProvider(client, PLANTED_KEY, replay.url + "/api/v1", stream=False)

    out = await collect(provider, request([user("Draw")], model="google/gemini-2.5-flash-image"))

    images = [e for e in out.events if isinstance(e, ImageDelta)]
    assert images == [ImageDelta(0, "image/png", base64.b64encode(PICTURE).decode(), None)]
    assert out.text == "Here is your picture."


async def test_openrouter_streamed_images_arrive_as_image_events(replay, client):
    url = "data:image/png;base64," + base64.b64encode(PICTURE).decode()
    chunks = [
        {
            "id": "gen-1",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Here"}}],
        },
        {
            "id": "gen-1",
            "choices": [
                {
                    "index": 0,
                    "delta": {"images": [{"type": "image_url", "image_url": {"url": url}}]},
                }
            ],
        },
        {"id": "gen-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    replay.queue(Reply.sse(body.encode()))
    provider = OpenRouterProvider(client, PLANTED_KEY, replay.url + "/api/v1")

    out = await collect(provider, request([user("Draw")], model="google/gemini-2.5-flash-image"))

    [image] = [e for e in out.events if isinstance(e, ImageDelta)]
    assert base64.b64decode(image.data or "") == PICTURE and image.media_type == "image/png"
