"""Issue #54, row C1: the 0.2.0 capabilities a vendor's request reads, over the real OpenAI
adapter (the vendor is a replay server): ``supportsStreaming: false`` asks for one whole
reply, ``maxOutputTokens`` caps it."""

from __future__ import annotations

from typing import Any

from runtime.core.spec import ModelCapabilities, ModelDefinition
from runtime.providers.registry import KEY_NAMES, install
from tests.runtime.conftest import World, agent, prompt

from .conftest import PLANTED_KEY
from .replay import Reply

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "One whole reply."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
}


async def test_C1_supports_streaming_false_and_max_output_tokens_shape_the_request(
    world: World, replay: Any, client: Any
) -> None:
    replay.queue(Reply.json(COMPLETION))
    # The adapters stream unless the model says it cannot.
    install(world.providers, client, environ={KEY_NAMES["openai"]: PLANTED_KEY})
    caps = ModelCapabilities(supports_streaming=False, max_output_tokens=64)
    model = ModelDefinition(
        name="m",
        provider="openai",
        model="gpt-4o-mini",
        base_url=replay.url + "/v1",
        api="chat",
        capabilities=caps,
    )
    world.define(model, prompt(), agent())

    thread, result = await world.chat("Hello")

    sent = replay.requests[0].json()
    assert sent["stream"] is False and sent["max_completion_tokens"] == 64
    assert result.stop_reason == "stop_on_response"
    assert (await world.messages(thread.id))[-1].content == "One whole reply."
