"""``POST /api/threads/{id}/revive`` (the reference studio's diagnostics button): a stalled
session is dispatched again at once, a healthy, parked or idle thread is left alone."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents_app.base import dispatch
from agents_app.models import ThreadSession
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)


@pytest.fixture
def started(monkeypatch: Any) -> list[str]:
    """The sessions dispatched (the starter a worker process installs)."""
    seen: list[str] = []
    monkeypatch.setattr(dispatch, "_starter", seen.append)
    return seen


def _revive(as_: Any, user: Any, thread: Any) -> dict[str, Any]:
    response = as_(user).post_json(f"/api/threads/{thread.pk}/revive")
    assert response.status_code == 200, response.content
    return dict(response.json())


@pytest.mark.django_db(transaction=True)
def test_I9_revive_dispatches_a_session_whose_heartbeat_stopped(
    as_: Any, alice: Any, thread_of: Any, started: list[str]
) -> None:
    thread = thread_of(alice)
    assert _revive(as_, alice, thread)["verdict"] == "idle" and started == []
    session = ThreadSession.objects.create(
        thread=thread,
        status=ThreadSession.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    answer = _revive(as_, alice, thread)
    assert (answer["verdict"], answer["action"]) == ("recovered", "aborted_takeover_resumed")
    assert answer["executing"] is True and answer["silenceMs"] > answer["ceilingMs"]
    assert started == [str(session.pk)]
    ThreadSession.objects.filter(pk=session.pk).update(heartbeat_at=timezone.now())
    assert _revive(as_, alice, thread)["verdict"] == "healthy"
    assert started == [str(session.pk)]  # a healthy session is left alone
    ThreadSession.objects.filter(pk=session.pk).update(status=ThreadSession.Status.PARKED)
    assert _revive(as_, alice, thread)["verdict"] == "parked"
    assert set(_revive(as_, alice, thread)) == {
        "verdict",
        "action",
        "executing",
        "incompleteLogs",
        "queuedMessages",
        "silenceMs",
        "ceilingMs",
        "strikes",
        "requestRestart",
    }


@pytest.mark.django_db
def test_revive_needs_access_to_the_thread(as_: Any, alice: Any, bob: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    refused = as_(bob).post_json(f"/api/threads/{thread.pk}/revive")
    assert refused.status_code in (403, 404)
