"""The periodic sweeps live through a database outage: a killed backend
(``pg_terminate_backend``, agents_app/base/faults.py) costs them one tick and one concise warning,
never a dead connection kept for ever or a traceback on every tick."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import connection

from agents_app.base import faults
from agents_app.models import ScheduledEffect, Thread
from agents_app.orchestration import effect_runner
from agents_app.tasks import session_tasks as tasks
from tests.agents_app.bridge.effects_support import *  # noqa: F403  (fixtures)
from tests.agents_app.bridge.effects_support import make_effect

pytestmark = pytest.mark.django_db(transaction=True)


def _kill_my_backend() -> None:
    connection.ensure_connection()
    faults._terminate("test", connection.connection.info.backend_pid)


def test_the_effect_sweep_reconnects_after_its_backend_is_killed(
    thread: Thread, effects: Any, settings: Any, caplog: Any
) -> None:
    effect = make_effect(thread)
    settings.STUDIO_FAULT_POINTS = {"effects_sweep": 1}
    faults._fired.clear()
    caplog.set_level(logging.WARNING, logger="agents_app.effects")
    try:
        effect_runner.drain_for(3)
    finally:
        settings.STUDIO_FAULT_POINTS = {}
    assert faults._fired == {"effects_sweep": 1}  # the fault really hit the sweep
    assert ScheduledEffect.objects.get(pk=effect.pk).status == "completed"
    assert [c["text"] for c in effects] == ["hi"]
    outage = [r for r in caplog.records if "database unavailable" in r.getMessage()]
    assert len(outage) == 1 and outage[0].exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_the_session_sweep_task_warns_once_per_outage_and_recovers(caplog: Any) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(3):  # the outage lasts several beat ticks
        _kill_my_backend()
        assert tasks.sweep_sessions() == 0
    warnings = [r for r in caplog.records if "database unavailable" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

    assert tasks.sweep_sessions() == 0  # the next tick after the outage reconnects and works
    assert any("reachable again" in r.getMessage() for r in caplog.records)
    assert Thread.objects.count() == 0  # and so does the connection for everything else
