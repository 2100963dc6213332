"""A vendor's error code and request id are its words too: a body or header that echoes the
key must not carry it into the stored error, the log rows, the frames or the result (the
message was scrubbed before; these two fields were kept as sent)."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import pytest

from runtime.providers.errors import AdapterError
from runtime.providers.openai.chat_completions import OpenAIProvider
from runtime.providers.registry import KEY_NAMES, install, store_env_lookup
from runtime.store.protocol import LogQuery
from tests.runtime.conftest import World, agent, prompt

from .conftest import PLANTED_KEY
from .helpers import collect, request, user
from .replay import Reply
from .test_engine_wiring import _model

# An OpenAI-shaped error whose code, type and request id all quote the key back.
PLANTED_ERROR = {
    "error": {
        "message": "The request was refused.",
        "type": f"type-{PLANTED_KEY}",
        "code": f"code-{PLANTED_KEY}",
    },
    "request_id": f"req-{PLANTED_KEY}",
}


def _fields(error: AdapterError) -> tuple[str | None, str | None]:
    return error.vendor_code, error.request_id


async def test_an_error_body_s_code_and_request_id_are_redacted(client, replay):
    replay.queue(Reply.json(PLANTED_ERROR, 400))
    provider = OpenAIProvider(client, PLANTED_KEY, replay.url + "/v1")

    with pytest.raises(AdapterError) as caught:
        await collect(provider, request([user("hi")]))

    assert _fields(caught.value) == ("code-[redacted]", "req-[redacted]")
    assert PLANTED_KEY not in json.dumps(caught.value.describe())
    assert PLANTED_KEY not in caught.value.message


async def test_a_request_id_header_that_echoes_the_key_is_redacted(client, replay):
    body = {"error": {"message": "slow down", "code": "rate_limit_exceeded"}}
    replay.queue(Reply.json(body, 400, **{"x-request-id": f"req-{PLANTED_KEY}"}))
    provider = OpenAIProvider(client, PLANTED_KEY, replay.url + "/v1")

    with pytest.raises(AdapterError) as caught:
        await collect(provider, request([user("hi")]))

    assert _fields(caught.value) == ("rate_limit_exceeded", "req-[redacted]")


async def test_an_error_event_mid_stream_is_redacted_too(client, replay):
    """Stream parsers classify an ``error`` event without the key at hand."""
    event = {"error": {"message": f"bad key {PLANTED_KEY}", "code": f"code-{PLANTED_KEY}"}}
    replay.queue(Reply.sse(f"data: {json.dumps(event)}\n\n".encode()))
    provider = OpenAIProvider(client, PLANTED_KEY, replay.url + "/v1")

    with pytest.raises(AdapterError) as caught:
        await collect(provider, request([user("hi")]))

    assert caught.value.vendor_code == "code-[redacted]"
    assert "[redacted]" in caught.value.message and PLANTED_KEY not in caught.value.message


async def test_nothing_the_engine_stores_or_sends_holds_the_planted_fields(
    world: World, replay, client, caplog
):
    caplog.set_level(logging.DEBUG)
    replay.queue(Reply.json(PLANTED_ERROR, 400))
    install(world.providers, client, env_lookup=store_env_lookup(world.store), environ={})
    world.define(_model(replay, "openai", "model-a"), prompt(), agent())
    thread = await world.thread(env={KEY_NAMES["openai"]: PLANTED_KEY})

    result = await world.run(thread.id, "hi")

    assert result.stop_reason == "step_error" and len(replay.requests) == 1
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None))
    messages = await world.messages(thread.id)
    everything: list[Any] = [
        *(json.dumps(dataclasses.asdict(log), default=str) for log in logs),
        *(json.dumps(frame, default=str) for frame in world.sink.frames[thread.id]),
        *(json.dumps(m.to_dict(), default=str) for m in messages),
        repr(result),
        caplog.text,
    ]
    assert [PLANTED_KEY in text for text in everything] == [False] * len(everything)
    stored = messages[-1].metadata["error"]
    assert (stored["vendor_code"], stored["request_id"]) == ("code-[redacted]", "req-[redacted]")
