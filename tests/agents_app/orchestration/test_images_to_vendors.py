"""A user's image through the service to each vendor (end to end, in-process runner).

The message is posted with the service (stored in the thread file system,
downsampled like an upload), the session runs with ``run_session_job`` on the
Django store, and the model's ``baseUrl`` points at a real local HTTP server
answering with a recorded streamed reply. The server sees what the vendor would.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.models import LanguageModel, Log, Thread, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import messages as message_service
from runtime.core.spec import (
    AgentDefinition,
    ModelCapabilities,
    ModelDefinition,
    PromptDefinition,
    SideConfig,
)
from tests.agents_app.api.api_support import _api_hosts  # noqa: F401
from tests.runtime.providers import recordings
from tests.runtime.providers.media_fixtures import media_in, png
from tests.runtime.providers.replay import ReplayServer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

KEYS = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
}
# vendor → (path prefix, model id, streamed text reply: cassette and interaction index)
VENDORS = {
    "openai": ("/v1", "gpt-4o-mini", "openai/chat_stream_tool_call_roundtrip.yaml", 1),
    "openrouter": (
        "/api/v1",
        "openai/gpt-4.1-mini",
        "openrouter/chat_stream_tool_call_roundtrip.yaml",
        1,
    ),
    "anthropic": ("/v1", "claude-sonnet-4-5", "anthropic/messages_stream_text.yaml", 0),
    "google": ("/v1beta", "gemini-2.0-flash", "gemini/stream_function_call_roundtrip.yaml", -1),
}


def _image_parts(vendor: str, body: dict[str, Any]) -> list[Any]:
    """The image parts of a request body, found the way each vendor spells them."""
    if vendor == "google":
        return [p for c in body["contents"] for p in c["parts"] if "inlineData" in p]
    if vendor == "anthropic":
        return [
            b
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "image"
        ]
    return [
        p
        for m in body["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


def _texts(body: dict[str, Any]) -> str:
    import json

    return json.dumps(body)


@sync_to_async
def _setup(user: Any, vendor: str, base_url: str, vision: bool | None) -> Thread:
    prefix, model_id, _, _ = VENDORS[vendor]
    capabilities = ModelCapabilities(vision=vision) if vision is not None else None
    model = ModelDefinition(
        name=f"{vendor}-model",
        provider=vendor,
        model=model_id,
        base_url=base_url + prefix,
        capabilities=capabilities,  # type: ignore[arg-type]
    )
    prompt = PromptDefinition(
        name="seer", model=model.name, prompt="You look at images.", include_chat=True
    )
    agent = AgentDefinition(name="seer", title="Seer", side_a=SideConfig(prompt="seer"))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )
    # The key is the server's and the "vendor" a local replay server: a superuser's tick lets
    # the key go there (the egress key rule, tests/agents_app/orchestration/test_egress_runtime.py).
    LanguageModel.objects.filter(name=model.name).update(send_instance_key_to_base_url=True)
    return thread_create(user=user, agent_name="seer")


@sync_to_async
def _post(thread: Thread, text: str, image: bytes, name: str) -> str | None:
    attachment = message_service.NewAttachment(
        name=name, mime_type="image/png", data=base64.b64encode(image).decode()
    )
    message_service.message_post(thread=thread, role="user", content=text, attachments=[attachment])
    row = ThreadSession.objects.filter(thread=thread, status__in=["queued", "running"]).first()
    return str(row.pk) if row else None


@sync_to_async
def _logged_bodies(thread: Thread) -> list[str]:
    import json

    return [json.dumps(log.request_body) for log in Log.objects.filter(thread=thread, kind="llm")]


async def _turn(replay: ReplayServer, vendor: str, thread: Thread, index: int) -> dict[str, Any]:
    _, _, cassette, at = VENDORS[vendor]
    replay.queue(recordings.cassette(cassette)[at].reply())
    image = png(color=(index * 20 % 255, 40, 90))
    session = await _post(thread, f"Picture {index}", image, f"pic{index}.png")
    assert session is not None
    await run_session_job(session)
    return replay.requests[-1].json()


@pytest.mark.parametrize("vendor", list(VENDORS))
async def test_images_reach_each_vendor_and_the_eleventh_oldest_becomes_a_placeholder(
    alice: Any, vendor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEYS[vendor], "sk-test-images")
    replay = ReplayServer().start()
    try:
        thread = await _setup(alice, vendor, replay.url, vision=True)
        first = await _turn(replay, vendor, thread, 0)
        [part] = _image_parts(vendor, first)
        # The image went in the vendor's own form, with the bytes that were posted.
        assert media_in(part) == [("image/png", png(color=(0, 40, 90)))]
        for index in range(1, 11):
            last = await _turn(replay, vendor, thread, index)
        assert len(_image_parts(vendor, last)) == 10  # the default recentImageThreshold
        assert "[Image: pic0.png" in _texts(last)
        assert "[Image: pic1.png" not in _texts(last)
        # The logs keep a size note, never the pixels.
        for logged in await _logged_bodies(thread):
            assert "[base64: " in logged and "iVBORw0KGgo" not in logged
    finally:
        replay.stop()


@pytest.mark.parametrize("vendor", list(VENDORS))
async def test_a_model_without_vision_gets_a_placeholder_instead_of_the_image(
    alice: Any, vendor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEYS[vendor], "sk-test-images")
    replay = ReplayServer().start()
    try:
        thread = await _setup(alice, vendor, replay.url, vision=False)
        body = await _turn(replay, vendor, thread, 0)
        assert _image_parts(vendor, body) == [] and media_in(body) == []
        assert "[Image omitted: pic0.png; this model does not support vision]" in _texts(body)
    finally:
        replay.stop()
