"""What a step of a vendor's model costs on the Django store (issue #39): the scripted loop of
test_step_statements.py never resolves an API key or calls an adapter, so the statements a
real provider adds at every step went uncounted (two per step, and a count of the thread's
responses per session, before Session 28).

The registry is the worker's own (``engines.provider_registry``: the HTTP adapters with the
store's env lookup and the egress key rule); the "vendor" is a local server replaying the
recorded OpenAI stream of a tool call, its call id changed per step, then the recorded text.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
from django.db import connection

from agents_app.bridge.store import _RESOLVE_ENV_SQL
from agents_app.orchestration.engines import provider_registry
from runtime.core.spec import ModelDefinition
from tests.agents_app.bridge.engine_on_django.test_step_statements import (  # noqa: F401
    statements,
)
from tests.runtime.conftest import World, agent, prompt
from tests.runtime.providers import recordings
from tests.runtime.providers.replay import ReplayServer
from tests.runtime.providers.test_end_to_end import multiply  # the recorded call's tool
from tests.runtime.test_step_cost import Meter, StepSink, no_background_opening  # noqa: F401

CASSETTE = "openai/chat_stream_tool_call_roundtrip.yaml"
RECORDED_CALL_ID = b"call_1EYWDzueHEp8OsB8jJSEp7WB"
STEPS = 6  # five tool calls, then the text


def _replies() -> list[Any]:
    call, text = recordings.cassette(CASSETTE)[:2]
    replies = []
    for step in range(1, STEPS):
        body = call.body.replace(RECORDED_CALL_ID, b"call_step%024d" % step)
        replies.append(dataclasses.replace(call, body=body).reply())
    return [*replies, text.reply()]


# A middle step: the two commits, and the API key's one read (a thread's own key: the egress
# rule reads nothing for it).
MIDDLE_STEP = {
    "postgresql": {"WITH": 2, "SELECT": 1},
    "sqlite": {"BEGIN": 2, "INSERT": 6, "SELECT": 4},
}


async def test_a_middle_step_of_a_vendors_model_adds_only_the_keys_one_read(
    world: World,
    statements: Any,  # noqa: F811  (the fixture of test_step_statements)
) -> None:
    replay = ReplayServer().start()
    async with httpx.AsyncClient() as http:
        try:
            world.providers = provider_registry(world.store, http)
            world.register(multiply)
            world.define(
                ModelDefinition(
                    name="vendor",
                    provider="openai",
                    model="gpt-4o-mini",
                    base_url=replay.url + "/v1",
                ),
                prompt(model="vendor", tools=["multiply"]),
                agent(),
            )
            meter = Meter()
            world.sink = StepSink(meter)  # before the engine is built (by the thread's creation)
            thread = await world.thread()
            await world.store.set_env(thread.id, "OPENAI_API_KEY", "sk-vendor-steps")
            replay.queue(*_replies())
            seen = statements(meter)
            result = await world.run(thread.id, "What is 1231 * 2331?")
        finally:
            replay.stop()
    assert (result.stop_reason, result.steps) == ("stop_on_response", STEPS), result
    assert len(replay.requests) == STEPS
    assert all(r.headers.get("authorization") == "Bearer sk-vendor-steps" for r in replay.requests)
    for step in range(1, STEPS - 1):
        assert dict(seen.by_step[step]) == MIDDLE_STEP[connection.vendor], (step + 1, seen.by_step)
    if connection.vendor == "postgresql":
        keys = [sql for sql in seen.sql if sql == _RESOLVE_ENV_SQL]
        assert len(keys) == STEPS  # one per request
