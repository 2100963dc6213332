"""Issue #54, row A3: handler-backed sides at the doors. ``GET /api/handlers`` lists the side
handlers (``define_handler`` in ``agents/handlers/``); a side naming one that is not registered
is refused with the field at every door (file import, the definition API, the studio form); a
registered one is stored, listed with ``side_*_backing: handler``, exported and imported
again, and takes its side's turns in a thread run over the API.

The handler is the repository's sample, ``agents/handlers/order_desk.py``, discovered from
``STUDIO_AGENTS_DIRS`` as the server discovers it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from agents_app.base.code_registry import reset_registry
from agents_app.models import Agent, LanguageModel, Prompt, ThreadSession
from agents_app.orchestration.runner import run_session_job
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

DESK = {"name": "desk", "sideA": {"handler": "order_desk"}, "sideB": {"human": True}}
UNKNOWN = (
    "No side handler named 'nope' is registered (define it with define_handler in "
    "agents/handlers/; registered: order_desk)."
)


@pytest.fixture(autouse=True)
def _repository_code() -> Iterator[None]:
    reset_registry(None)  # the registry of STUDIO_AGENTS_DIRS, loaded on first use
    yield
    reset_registry(None)


def _import(root: Path, *agents: dict[str, Any]) -> str:
    (root / "agents").mkdir(parents=True, exist_ok=True)
    for agent in agents:
        (root / "agents" / f"{agent['name']}.json").write_text(json.dumps(agent))
    err = io.StringIO()
    call_command("import_definitions", str(root), stdout=io.StringIO(), stderr=err)
    return err.getvalue()


def _run(thread_id: str) -> None:
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


def test_api_handlers_lists_registered_handlers(as_: Any, ops: Any, alice: Any) -> None:
    listed = as_(ops).get("/api/handlers")

    assert listed.status_code == 200, listed.content
    assert listed.json() == {
        "handlers": [
            {
                "name": "order_desk",
                "description": "Answers order-status questions by rule (order numbers like "
                "A-1001): no model.",
            }
        ]
    }
    assert as_(alice).get("/api/handlers").status_code == 403  # staff only, as the studio's


def test_A3_a_side_naming_an_unregistered_handler_is_refused_at_every_door(
    as_: Any, ops: Any, client: Client, tmp_path: Path
) -> None:
    # The reference studio's agent editor.
    refused = as_(ops).post_json(
        "/api/agents",
        {
            "name": "desk",
            "side_a_backing": "handler",
            "side_a_handler": "nope",
            "side_a_agent_prompt": None,
            "side_a_stop_on_response": True,
            "side_b_backing": "human",
        },
    )
    assert refused.status_code == 400, refused.content
    assert refused.json()["fieldErrors"] == {"sideA.handler": UNKNOWN}

    # A definitions folder.
    with pytest.raises(CommandError):
        _import(tmp_path, {**DESK, "sideA": {"handler": "nope"}})

    # The studio's agent form.
    client.force_login(ops)
    add = reverse("admin:agents_app_agent_add")
    model = LanguageModel.objects.create(name="m", provider="test", model="scripted")
    prompt = Prompt.objects.create(name="p", model=model, text="You help.")
    data = fill(
        read_form(client, add),
        name="desk",
        spec_version="0.2.0",
        type="dual_ai",
        side_a_prompt=prompt.pk,
        side_b_prompt="",
        side_b_handler="nope",
    )
    assert errors_of(post(client, add, data))["side_b_handler"] == [UNKNOWN]
    assert not Agent.objects.exists()


def test_A3_a_handler_named_in_an_import_is_refused_with_the_file(tmp_path: Path) -> None:
    err = io.StringIO()
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "desk.json").write_text(
        json.dumps({**DESK, "sideA": {"handler": "nope"}})
    )
    with pytest.raises(CommandError):
        call_command("import_definitions", str(tmp_path), stdout=io.StringIO(), stderr=err)
    assert f"agents/desk.json: sideA.handler: {UNKNOWN}" in err.getvalue()


def test_A3_a_registered_handler_side_round_trips_through_export_and_import(
    as_: Any, ops: Any, tmp_path: Path
) -> None:
    _import(tmp_path / "in", {**DESK, "sideA": {"handler": "order_desk", "label": "Desk"}})
    row = Agent.objects.get(name="desk")
    assert (row.side_a_handler, row.side_a_prompt, row.spec_version) == (
        "order_desk",
        None,
        "0.2.0",
    )

    shown = as_(ops).get("/api/agents/desk").json()["agent"]
    assert (shown["side_a_backing"], shown["side_b_backing"]) == ("handler", "human")
    assert (shown["side_a_handler"], shown["side_a_agent_prompt"]) == ("order_desk", None)

    call_command("export_definitions", str(tmp_path / "out"), stdout=io.StringIO())
    exported = json.loads((tmp_path / "out" / "agents" / "desk.json").read_text())
    assert (exported["sideA"], exported["sideB"]) == (
        {"handler": "order_desk", "label": "Desk"},
        {"human": True},
    )
    Agent.objects.all().delete()
    _import(tmp_path / "out")
    assert Agent.objects.get(name="desk").side_a_handler == "order_desk"


def test_A3_a_handler_side_answers_a_thread_over_the_api(
    as_: Any, alice: Any, tmp_path: Path
) -> None:
    _import(tmp_path, DESK)
    client = as_(alice)
    thread_id = client.post_json("/api/threads", {"agent_id": "desk"}).json()["threadId"]

    for text in ("Where is my order a-1001?", "And A-1002?"):
        posted = client.post_json(f"/api/threads/{thread_id}/messages", {"content": text})
        assert posted.status_code == 202, posted.content
        _run(thread_id)

    messages = client.get(f"/api/threads/{thread_id}/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "Where is my order a-1001?"),
        ("assistant", "Order A-1001 is shipped on 3 March with ParcelPost (tracking PP-55821)."),
        ("user", "And A-1002?"),
        ("assistant", "Order A-1002 is being packed; it leaves the warehouse by 7 March."),
    ]
    logs = client.get(f"/api/threads/{thread_id}/logs").json()["logs"]
    assert [(log["kind"], log["provider"], log["model"], log["error_type"]) for log in logs] == [
        ("handler_execution", "system", "order_desk", None),
        ("handler_execution", "system", "order_desk", None),
    ]
    sessions = ThreadSession.objects.filter(thread_id=thread_id).order_by("created_at")
    assert [s.stop_reason for s in sessions] == ["awaiting_human", "awaiting_human"]
    listed = client.get("/api/threads").json()["threads"]
    assert [(t["agent"]["side_a_backing"], t["agent"]["side_b_backing"]) for t in listed] == [
        ("handler", "human")
    ]


def test_A3_the_reference_editor_echoing_a_handler_agent_saves_it_unchanged(
    as_: Any, ops: Any, tmp_path: Path
) -> None:
    _import(tmp_path, {**DESK, "sideA": {"handler": "order_desk", "label": "Desk"}})
    client = as_(ops)
    shown = client.get("/api/agents/desk").json()["agent"]

    saved = client.put(
        "/api/agents/desk", {**shown, "title": "Order desk"}, content_type="application/json"
    )

    assert saved.status_code == 200, saved.content
    assert saved.json()["agent"]["definition"] == {
        "name": "desk",
        "title": "Order desk",
        "sideA": {"handler": "order_desk", "label": "Desk"},
        "sideB": {"human": True},
    }
