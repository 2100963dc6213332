"""Issue #54, row I7 (spec 0.2.0 wire): every agent in ``GET /api/agents`` and every thread's
agent in ``GET /api/threads`` carries ``side_a_backing``/``side_b_backing``, one of
``human``, ``prompt`` or ``handler``, as the definition backs each side. The agents come in as
spec 0.1.0 and 0.2.0 files; the handler is the repository's sample (``order_desk``)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from agents_app.base.code_registry import reset_registry
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

FILES: dict[str, dict[str, Any]] = {
    "models/m": {"name": "m", "provider": "test", "model": "scripted"},
    "prompts/p": {"name": "p", "model": "m", "prompt": "Help."},
    # spec 0.2.0 side backings
    "agents/helpdesk": {"name": "helpdesk", "sideA": {"prompt": "p"}, "sideB": {"human": True}},
    "agents/interview": {"name": "interview", "sideA": {"human": True}, "sideB": {"prompt": "p"}},
    "agents/desk": {"name": "desk", "sideA": {"handler": "order_desk"}, "sideB": {"human": True}},
    # spec 0.1.0 types
    "agents/debate": {
        "name": "debate",
        "type": "dual_ai",
        "sideA": {"prompt": "p", "stopOnResponse": False},
        "sideB": {"prompt": "p", "stopOnResponse": False},
        "maxSessionTurns": 4,
    },
    "agents/chat": {"name": "chat", "type": "ai_human", "sideA": {"prompt": "p"}},
}
EXPECTED = {
    "helpdesk": ("prompt", "human"),
    "interview": ("human", "prompt"),
    "desk": ("handler", "human"),
    "debate": ("prompt", "prompt"),
    "chat": ("prompt", "human"),
}


@pytest.fixture(autouse=True)
def _repository_code() -> Iterator[None]:
    reset_registry(None)  # the registry of STUDIO_AGENTS_DIRS (the sample handler)
    yield
    reset_registry(None)


def test_I7_agent_and_thread_listings_say_how_each_side_is_backed(
    tmp_path: Path, as_: Any, alice: Any
) -> None:
    for name, body in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.json").write_text(json.dumps(body))
    call_command("import_definitions", str(tmp_path), stdout=io.StringIO(), stderr=io.StringIO())
    client = as_(alice)

    agents = client.get("/api/agents").json()["agents"]
    assert {a["name"]: (a["side_a_backing"], a["side_b_backing"]) for a in agents} == EXPECTED
    for name in EXPECTED:
        created = client.post_json("/api/threads", {"agent_id": name})
        assert created.status_code in (200, 201), created.content
    threads = client.get("/api/threads?limit=10").json()["threads"]
    listed = {
        t["agent"]["name"]: (t["agent"]["side_a_backing"], t["agent"]["side_b_backing"])
        for t in threads
    }
    assert listed == EXPECTED
