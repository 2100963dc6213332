"""Issue #54, row D4: the ``generation`` events a long streamed tool argument brings add no
statement to a step. The vendor step of test_vendor_step_statements.py, its recorded call
given a 400-character argument (five reports per step), runs the same statements per step.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
from django.db import connection

from agents_app.orchestration.engines import provider_registry
from runtime.core.spec import ModelDefinition
from runtime.store.events import ListSink
from tests.agents_app.bridge.engine_on_django.test_step_statements import (  # noqa: F401
    statements,
)
from tests.agents_app.bridge.engine_on_django.test_vendor_step_statements import (
    CASSETTE,
    MIDDLE_STEP,
    RECORDED_CALL_ID,
    STEPS,
)
from tests.runtime.conftest import World, agent, prompt
from tests.runtime.providers import recordings
from tests.runtime.providers.replay import ReplayServer
from tests.runtime.providers.test_D4_generation_event import long_call, note
from tests.runtime.test_step_cost import Meter, StepSink, no_background_opening  # noqa: F401


class KeepingStepSink(StepSink):
    """Closes the meter's steps and keeps the frames."""

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        super().emit(thread_id, frame)
        ListSink.emit(self, thread_id, frame)


def _replies() -> list[Any]:
    call, text = recordings.cassette(CASSETTE)[:2]
    call = long_call(call)
    replies = []
    for step in range(1, STEPS):
        body = call.body.replace(RECORDED_CALL_ID, b"call_step%024d" % step)
        replies.append(dataclasses.replace(call, body=body).reply())
    return [*replies, text.reply()]


async def test_D4_generation_events_add_no_statement_to_a_step(
    world: World,
    statements: Any,  # noqa: F811  (the fixture of test_step_statements)
) -> None:
    replay = ReplayServer().start()
    async with httpx.AsyncClient() as http:
        try:
            world.providers = provider_registry(world.store, http)
            world.register(note)
            world.define(
                ModelDefinition(
                    name="vendor",
                    provider="openai",
                    model="gpt-4o-mini",
                    base_url=replay.url + "/v1",
                ),
                prompt(model="vendor", tools=["note"]),
                agent(),
            )
            meter = Meter()
            sink = KeepingStepSink(meter)
            world.sink = sink  # before the engine is built (by the thread's creation)
            thread = await world.thread()
            await world.store.set_env(thread.id, "OPENAI_API_KEY", "sk-vendor-steps")
            replay.queue(*_replies())
            seen = statements(meter)
            result = await world.run(thread.id, "Note the fox, five times.")
        finally:
            replay.stop()
    assert (result.stop_reason, result.steps) == ("stop_on_response", STEPS), result
    generation = sink.events(thread.id, "generation")
    assert len(generation) == 5 * (STEPS - 1)  # five per long call, none for the short text
    for step in range(1, STEPS - 1):
        assert dict(seen.by_step[step]) == MIDDLE_STEP[connection.vendor], (step + 1, seen.by_step)
