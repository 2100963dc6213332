"""What a worker's supervisor asks the database twice a second and every heartbeat: which of
its threads are stopped, and which sessions it still holds (``services/sessions/lifecycle.py``; one
fixed statement each on PostgreSQL, the ORM elsewhere; both must answer alike)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents_app.models import Thread, ThreadSession
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.sessions import lifecycle as sessions
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db


def _threads(user: Any, count: int) -> list[Thread]:
    define_agent("helper", [{"content": "x"}])
    return [thread_create(user=user, agent_name="helper") for _ in range(count)]


def test_stopped_threads_are_the_stopped_ones_among_those_asked(alice: Any) -> None:
    stopped, other_stopped, running, not_asked = _threads(alice, 4)
    Thread.objects.filter(pk__in=[stopped.pk, other_stopped.pk, not_asked.pk]).update(stopped=True)
    asked = [str(stopped.pk), str(other_stopped.pk), str(running.pk), str(uuid.uuid4())]
    assert sessions.stopped_threads(asked) == {str(stopped.pk), str(other_stopped.pk)}
    assert sessions.stopped_threads([str(running.pk)]) == set()
    assert sessions.stopped_threads([]) == set()


def test_a_heartbeat_refreshes_the_owners_running_sessions_and_names_the_lost_ones(
    alice: Any,
) -> None:
    long_ago = timezone.now() - timedelta(minutes=5)
    rows = {}
    for (owner, status), thread in zip(
        [("w1", "running"), ("w1", "running"), ("w2", "running"), ("w1", "completed")],
        _threads(alice, 4),
        strict=True,
    ):
        row = ThreadSession.objects.create(
            thread=thread, owner=owner, status=status, heartbeat_at=long_ago
        )
        rows[(owner, status, len(rows))] = str(row.pk)
    mine = [pk for (owner, status, _), pk in rows.items() if owner == "w1" and status == "running"]
    gone = str(uuid.uuid4())
    lost = sessions.sessions_heartbeat([*rows.values(), gone], "w1")
    assert lost == set(rows.values()) - set(mine) | {gone}
    beats = dict(ThreadSession.objects.values_list("pk", "heartbeat_at"))
    for pk in rows.values():
        refreshed = beats[uuid.UUID(pk)] > long_ago
        assert refreshed == (pk in mine), pk
