"""Embedded mode (no Redis): the in-process sweeper claims and runs due effects."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection, connections

from agents_app.models import ScheduledEffect, Thread
from agents_app.orchestration import effect_runner
from agents_app.orchestration.engines import build_engine
from agents_app.orchestration.executor import inprocess
from tests.agents_app.bridge.effects_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sweeper(settings: Any, effects: Any) -> Any:
    if connection.vendor == "sqlite" and getattr(connection, "is_in_memory_db", bool)():
        # Shared-cache in-memory SQLite fails ("table is locked") instead of waiting when two
        # threads write; run with TEST_DB_NAME=/tmp/x.sqlite3 (a file, as in embedded mode).
        pytest.skip("needs a database file, not the in-memory SQLite test database")
    settings.STUDIO_EXECUTOR = "inprocess"
    running = effect_runner.start_embedded_sweeper(inprocess.loop)
    assert running is not None
    yield running
    effect_runner.stop_embedded_sweeper()
    # The sweeper reached the ORM from asgiref's shared thread: close that connection.
    asyncio.run_coroutine_threadsafe(sync_to_async(connections.close_all)(), running.loop).result(
        10
    )


def _wait_for(effect_id: str, status: str, timeout: float = 10) -> ScheduledEffect:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = ScheduledEffect.objects.get(pk=effect_id)
        if row.status == status:
            return row
        time.sleep(0.05)
    raise AssertionError(f"effect {effect_id} did not reach {status}: {row.status}")


def test_the_in_process_sweeper_runs_effects_when_due(
    thread: Thread, effects: Any, sweeper: Any
) -> None:
    async def schedule() -> tuple[str, str]:
        state = await build_engine().thread_state(str(thread.pk))
        soon = await state.schedule_effect("note", {"text": "embedded"}, delay_ms=300)
        canceled = await state.schedule_effect("note", {"text": "never"}, delay_ms=300)
        await state.remove_scheduled_effect(canceled)
        return soon, canceled

    started = time.monotonic()
    soon, canceled = async_to_sync(schedule)()
    row = _wait_for(soon, "completed")
    assert time.monotonic() - started >= 0.3
    assert row.started_at is not None and row.started_at >= row.due_at
    assert [c["text"] for c in effects] == ["embedded"]
    assert ScheduledEffect.objects.get(pk=canceled).status == "agent_canceled"


def test_other_executors_start_no_sweeper(settings: Any) -> None:
    settings.STUDIO_EXECUTOR = "celery"
    assert effect_runner.start_embedded_sweeper(inprocess.loop) is None
