"""The engine's effect tests (tests/runtime/test_effects.py) again over ``DjangoStore``,
plus what only the database shows: canceled runs stay in history."""

from __future__ import annotations

from typing import Any

from agents_app.models import ScheduledEffect
from tests.agents_app.bridge.engine_on_django.conftest import *  # noqa: F403  (DjangoStore fixtures)
from tests.runtime.test_effects import *  # noqa: F403
from tests.runtime.test_effects import state  # noqa: F401  (the fixture, by name)

# The memory store's own history check; here the database history tests below replace it.
del test_memory_store_keeps_canceled_runs_in_history  # noqa: F821


async def test_canceled_runs_stay_in_history_as_agent_canceled(state: Any) -> None:  # noqa: F811
    effect_id = await state.schedule_effect("remind", {"text": "x"}, 60_000)
    assert await state.remove_scheduled_effect(effect_id)
    row = await ScheduledEffect.objects.aget(pk=effect_id)
    assert (row.status, row.args, row.completed_at is not None) == (
        "agent_canceled",
        {"text": "x"},
        True,
    )


async def test_due_time_and_max_attempts_are_stored(state: Any, settings: Any) -> None:  # noqa: F811
    settings.STUDIO_EFFECT_MAX_ATTEMPTS = 7
    effect_id = await state.schedule_effect("ping", None, 90_000)
    row = await ScheduledEffect.objects.aget(pk=effect_id)
    [run] = await state.get_scheduled_effects()
    assert int(row.due_at.timestamp() * 1000) == run.scheduled_at
    assert (row.status, row.max_attempts, row.attempts) == ("pending", 7, 0)
