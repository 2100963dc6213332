"""Issue #38: ``tenvs`` beside ``env`` on thread creation (or update) was silently dropped; now
the request is refused with the field named, and either name alone still works."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.models import Thread
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def test_tenvs_beside_env_on_thread_creation_is_refused(as_: Any, alice: Any, agent: str) -> None:
    body = {"agent_id": agent, "env": {"A": "1"}, "tenvs": {"B": "2"}}
    response = as_(alice).post_json("/api/threads", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == (
        "Invalid request: tenvs: tenvs is the legacy name of env; give one of them"
    )
    assert not Thread.objects.filter(agent__name=agent).exists()


def test_tenvs_alone_still_sets_the_threads_env(as_: Any, alice: Any, agent: str) -> None:
    response = as_(alice).post_json("/api/threads", {"agent_id": agent, "tenvs": {"B": "2"}})
    assert response.status_code == 200, response.content
