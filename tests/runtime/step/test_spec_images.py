"""What the model is sent of a thread's images and files (spec ``ModelCapabilities.vision``,
``recentImageThreshold``, ``ToolContent``/``ImageContent``), through the engine and the
scripted ``test`` provider, which checks the request with ``expectInput``."""

from __future__ import annotations

import base64
import io
from typing import Any

from PIL import Image

from runtime.core.spec import ModelCapabilities, ModelDefinition
from runtime.engine import NewMessage
from runtime.step import media
from runtime.step.media import ImageLimits
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


def png(color: tuple[int, int, int] = (10, 120, 200), size: tuple[int, int] = (40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


async def attach(world: World, thread_id: str, name: str, data: bytes, mime: str) -> dict[str, Any]:
    path = f"/attachments/{name}"
    await world.store.write_file(thread_id, path, data, mime)
    return {
        "id": path,
        "type": "file",
        "path": path,
        "name": name,
        "mimeType": mime,
        "size": len(data),
    }


def images_sent(request: Any) -> list[str]:
    return [
        p["attachment"]["name"]
        for m in request.messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


def texts_sent(request: Any) -> str:
    return "\n".join(
        p.get("text", "") if isinstance(p, dict) else ""
        for m in request.messages
        for p in (
            m["content"]
            if isinstance(m.get("content"), list)
            else [{"text": m.get("content") or ""}]
        )
    )


async def test_spec_vision_image_attachment_is_sent_as_an_image_part(world: World):
    world.script(
        "m",
        [
            {
                "content": "A blue square.",
                "expectInput": {
                    "imageCount": 1,
                    "attachmentNames": ["sq.png"],
                    "attachmentTypes": ["image/png"],
                },
            }
        ],
    )
    world.define(prompt(), agent())
    thread = await world.thread()
    ref = await attach(world, thread.id, "sq.png", png(), "image/png")

    result = await world.engine.run_session(
        thread.id, message=NewMessage("What is it?", attachments=[ref])
    )

    assert result.stop_reason == "stop_on_response"
    [request] = world.requests()
    part = request.messages[-1]["content"][1]
    assert part["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png()).decode()


async def test_spec_vision_false_replaces_images_with_a_placeholder_naming_the_file(world: World):
    world.script(
        "m", [{"content": "ok", "expectInput": {"imageCount": 0, "containsMessage": "sq.png"}}]
    )
    world.define(
        ModelDefinition(
            name="m",
            provider="test",
            model="scripted",
            capabilities=ModelCapabilities(vision=False),
        ),
        prompt(),
        agent(),
    )
    world.providers.override("m", world.scripted["m"])
    thread = await world.thread()
    ref = await attach(world, thread.id, "sq.png", png(), "image/png")

    result = await world.engine.run_session(
        thread.id, message=NewMessage("What is it?", attachments=[ref])
    )

    assert result.stop_reason == "stop_on_response"
    assert "[Image omitted: sq.png; this model does not support vision]" in texts_sent(
        world.requests()[0]
    )


async def test_spec_recent_image_threshold_default_keeps_the_newest_ten_images(world: World):
    replies = [{"content": f"seen {i}"} for i in range(11)]
    replies[-1]["expectInput"] = {"imageCount": 10, "containsMessage": "[Image: img0.png (40x30)]"}
    world.script("m", replies)
    world.define(prompt(), agent())
    thread = await world.thread()
    for i in range(11):
        ref = await attach(world, thread.id, f"img{i}.png", png((i * 20, 0, 0)), "image/png")
        ref["width"], ref["height"] = 40, 30
        result = await world.engine.run_session(
            thread.id, message=NewMessage(f"image {i}", attachments=[ref])
        )
        assert result.stop_reason == "stop_on_response", result

    last = world.requests()[-1]
    assert images_sent(last) == [f"img{i}.png" for i in range(1, 11)]


async def test_spec_recent_image_threshold_is_read_from_the_prompt(world: World):
    world.script("m", [{"content": "a"}, {"content": "b", "expectInput": {"imageCount": 1}}])
    world.define(prompt(recent_image_threshold=1), agent())
    thread = await world.thread()
    for i in range(2):
        ref = await attach(world, thread.id, f"i{i}.png", png(), "image/png")
        await world.engine.run_session(thread.id, message=NewMessage("look", attachments=[ref]))
    assert images_sent(world.requests()[-1]) == ["i1.png"]


async def test_pdf_becomes_a_document_part_and_other_files_a_text_reference(world: World):
    world.script(
        "m",
        [
            {
                "content": "ok",
                "expectInput": {
                    "documentCount": 1,
                    "imageCount": 0,
                    "attachmentTypes": ["application/pdf"],
                },
            }
        ],
    )
    world.define(prompt(), agent())
    thread = await world.thread()
    pdf = await attach(world, thread.id, "doc.pdf", b"%PDF-1.4 tiny", "application/pdf")
    csv = await attach(world, thread.id, "data.csv", b"a,b\n1,2\n", "text/csv")

    result = await world.engine.run_session(
        thread.id, message=NewMessage("Read these", attachments=[pdf, csv])
    )

    assert result.stop_reason == "stop_on_response"
    text = texts_sent(world.requests()[0])
    assert "[Attached file: data.csv (text/csv, 8 bytes) at /attachments/data.csv]" in text


async def test_a_missing_image_is_named_not_dropped(world: World):
    world.script(
        "m", [{"content": "ok", "expectInput": {"imageCount": 0, "containsMessage": "gone.png"}}]
    )
    world.define(prompt(), agent())
    thread = await world.thread()
    ref = {
        "id": "/attachments/gone.png",
        "type": "file",
        "path": "/attachments/gone.png",
        "name": "gone.png",
        "mimeType": "image/png",
    }
    result = await world.engine.run_session(thread.id, message=NewMessage("hi", attachments=[ref]))
    assert result.stop_reason == "stop_on_response"


@define_tool("Take a screenshot")
async def screenshot(state: Any) -> dict[str, Any]:
    data = base64.b64encode(png((0, 200, 0))).decode()
    return {
        "content": [
            {"type": "text", "text": "Here it is"},
            {"type": "image", "data": data, "mimeType": "image/png"},
        ]
    }


async def test_spec_tool_image_content_reaches_the_model_with_the_tool_result(world: World):
    world.register(screenshot)
    world.script(
        "m",
        [
            {"toolCalls": [{"name": "screenshot", "arguments": {}}]},
            {
                "content": "Green.",
                "expectInput": {"imageCount": 1, "attachmentTypes": ["image/png"]},
            },
        ],
    )
    world.define(prompt(tools=["screenshot"]), agent())

    thread, result = await world.chat("Take a screenshot")

    assert result.stop_reason == "stop_on_response"
    tool = next(m for m in world.requests()[-1].messages if m["role"] == "tool")
    kinds = [p["type"] for p in tool["content"]]
    assert kinds[0] == "text" and "image_url" in kinds


async def test_expect_input_names_what_differs(world: World):
    world.script(
        "m", [{"content": "ok", "expectInput": {"imageCount": 2, "attachmentNames": ["x.png"]}}]
    )
    world.define(prompt(), agent())
    thread = await world.thread()
    ref = await attach(world, thread.id, "sq.png", png(), "image/png")
    result = await world.engine.run_session(thread.id, message=NewMessage("hi", attachments=[ref]))
    assert result.stop_reason == "step_error"
    assert "expected 2 images, got 1" in (result.detail or "")
    assert "x.png" in (result.detail or "")


async def test_images_over_the_vendor_limit_are_downsampled_and_the_file_kept(world: World):
    big = png(size=(2600, 1000))
    model = ModelDefinition(name="m", provider="anthropic", model="claude")
    part = media.media_part(
        {
            "name": "big.png",
            "mimeType": "image/png",
            "path": "/a/big.png",
            "width": 2600,
            "height": 1000,
        },
        big,
    )
    [fitted] = await media.fit_for_model([{"role": "user", "content": [part]}], model)
    url = fitted["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as image:
        assert max(image.size) <= media.VENDOR_LIMITS["anthropic"].side
    assert part["image_url"]["url"].startswith("data:image/png")  # the original part untouched
    small = media.downsample_to(png(), ImageLimits(100, 10_000_000))
    assert small is None  # already within the limits: sent as stored


async def test_spec_generated_images_are_stored_attached_and_streamed(world: World):
    picture = base64.b64encode(png((200, 100, 0))).decode()
    world.script(
        "m",
        [
            {
                "content": "Here is a drawing.",
                "images": [{"mimeType": "image/png", "data": picture}],
            },
            {
                "content": "It is orange.",
                "expectInput": {"imageCount": 1, "attachmentNames": ["generated-1.png"]},
            },
        ],
    )
    world.define(prompt(), agent())
    thread, _ = await world.chat("Draw something")

    answer = (await world.messages(thread.id))[-1]
    [ref] = answer.attachments
    assert ref["name"] == "generated-1.png" and ref["generated"] is True
    assert await world.store.read_file(thread.id, ref["path"]) == png((200, 100, 0))
    [frame] = world.sink.of_type(thread.id, "message_image")
    assert frame["message_id"] == answer.id and frame["attachment"] == ref
    # The model sees its own image again on the next turn.
    result = await world.run(thread.id, "What colour is it?")
    assert result.stop_reason == "stop_on_response"


async def test_an_image_only_reply_is_not_an_empty_response(world: World):
    picture = base64.b64encode(png()).decode()
    world.script("m", [{"images": [{"data": picture}]}])
    world.define(prompt(), agent())
    thread, result = await world.chat("Just draw")
    assert result.stop_reason == "stop_on_response"
    answer = (await world.messages(thread.id))[-1]
    assert answer.attachments and not answer.tool_calls


def test_a_scripted_image_that_is_not_base64_is_refused_at_definition_time():
    import pytest
    from pydantic import ValidationError

    from runtime.core.spec import ScriptedResponse

    with pytest.raises(ValidationError, match="data must be base64"):
        ScriptedResponse.model_validate({"images": [{"data": "not base64!"}]})


async def test_an_image_without_stored_dimensions_is_measured_before_sending():
    big = png(size=(3200, 900))
    model = ModelDefinition(name="m", provider="google", model="gemini")
    part = media.media_part(
        {"name": "wide.png", "mimeType": "image/png", "path": "/a/wide.png"}, big
    )
    [fitted] = await media.fit_for_model([{"role": "user", "content": [part]}], model)
    url = fitted["content"][0]["image_url"]["url"]
    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as image:
        assert image.size == (3072, 864)
    small = media.media_part({"name": "s.png", "mimeType": "image/png", "path": "/a/s.png"}, png())
    [same] = await media.fit_for_model([{"role": "user", "content": [small]}], model)
    assert same["content"][0] == small
