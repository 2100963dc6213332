"""Issue #54, row A7 (spec 0.2.0 ``parentHooks``) at the doors: a child agent's required
parent hooks through ``import_definitions`` and ``export_definitions`` (0.2.0; 0.1.0 refuses
them), ``GET /api/agents`` (listed as written), the definition API, and the studio's agent
and Structure pages (shown read-only, in words). A requirement that cannot run is refused
at save time with ``parentHooks[i].<field>`` named. The engine side (the order the hooks
run in on the parent, their ``source: child`` context) is
tests/runtime/tools/test_spec_0_2_0_parent_hooks.py.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from agents_app.models import Agent
from agents_app.services.definitions import rows as definition_rows
from tests.agents_app.admin.admin_pages import fill, post, read_form
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

MODEL = {"name": "m", "provider": "test", "model": "scripted"}
PROMPT = {"name": "p", "model": "m", "prompt": "You help.", "includeChat": True}
REQUIRED = [
    {"hook": "audit", "reason": "Keeps the audit trail", "stage": "before_parent"},
    {"hook": "trace", "reason": "Traces each reply"},
]
CHILD = {
    "name": "helper",
    "sideA": {"prompt": "p"},
    "sideB": {"human": True},
    "exposeAsTool": True,
    "toolDescription": "Looks things up",
    "parentHooks": REQUIRED,
}


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A known code registry: hooks ``audit`` and ``trace``."""
    monkeypatch.setattr(
        definition_rows, "registered_code_names", lambda: (set(), {"audit", "trace"})
    )


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _write(root: Path, agent: dict[str, Any]) -> Path:
    files = {"models/m": MODEL, "prompts/p": PROMPT, "agents/helper": agent}
    for label, data in files.items():
        path = root / f"{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    return root


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _fails(*args: str) -> str:
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(*args, stdout=io.StringIO(), stderr=err)
    return err.getvalue()


def test_A7_parent_hooks_are_imported_listed_as_written_and_exported_in_0_2_0_only(
    tmp_path: Path, as_: Any, alice: Any
) -> None:
    _run("import_definitions", str(_write(tmp_path / "src", CHILD)))

    row = Agent.objects.get(name="helper")
    assert (row.spec_version, row.parent_hooks) == ("0.2.0", REQUIRED)
    [listed] = as_(alice).get("/api/agents").json()["agents"]
    assert listed["parentHooks"] == REQUIRED
    _run("export_definitions", str(tmp_path / "out"))
    exported = json.loads((tmp_path / "out" / "agents" / "helper.json").read_text())
    assert exported == CHILD
    stderr = _fails("export_definitions", "--spec", "0.1.0", str(tmp_path / "old"))
    assert (
        "agents/helper.json: parentHooks: 0.1.0 has no parentHooks: a child agent cannot "
        "require hooks on its parents there; keep this agent in 0.2.0."
    ) in stderr


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"parentHooks": [{"hook": "gone", "reason": "Audits"}]},
            "parentHooks[0].hook: Hook 'gone' is not registered: a required parent hook must "
            "exist in code (agents/hooks/), or every parent of this agent would fail.",
        ),
        (
            {"parentHooks": [*REQUIRED, {"hook": "audit", "reason": "Again"}]},
            "parentHooks[2].hook: Hook 'audit' is required twice; list each hook once.",
        ),
        (
            {"parentHooks": [{"hook": "audit", "reason": "  "}]},
            "parentHooks[0].reason: Say why the parents need this hook",
        ),
        (
            {"parentHooks": [{"hook": "audit", "reason": "x", "stage": "during"}]},
            "parentHooks.0.stage",
        ),
        (
            {"exposeAsTool": False, "toolDescription": None},
            "parentHooks: Only an agent other agents can start as a subagent (exposeAsTool: "
            "true) may require hooks on its parents",
        ),
    ],
)
def test_A7_a_requirement_that_cannot_run_is_refused_at_import_naming_the_field(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    agent = {k: v for k, v in {**CHILD, **change}.items() if v is not None}

    stderr = _fails("import_definitions", str(_write(tmp_path, agent)))

    assert f"agents/helper.json: {said}" in stderr
    assert not Agent.objects.exists()


def test_A7_the_definition_api_writes_refuses_and_keeps_parent_hooks(
    as_: Any, ops: Any, tmp_path: Path
) -> None:
    _run("import_definitions", str(_write(tmp_path, {**CHILD, "parentHooks": None})))
    client = as_(ops)
    listing = client.get("/api/agents/helper").json()["agent"]
    assert listing["parentHooks"] == []

    # An editor echoing the listing with hooks added writes them (either spelling).
    for key in ("parentHooks", "parent_hooks"):
        saved = client.put(
            "/api/agents/helper", {**listing, key: REQUIRED}, content_type="application/json"
        )
        assert saved.status_code == 200, saved.content
        assert Agent.objects.get(name="helper").parent_hooks == REQUIRED
    bad = [{"hook": "gone", "reason": "Audits"}]
    refused = client.put(
        "/api/agents/helper", {**listing, "parentHooks": bad}, content_type="application/json"
    )
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"]["parentHooks[0].hook"].startswith(
        "Hook 'gone' is not registered"
    )
    # The echo of the stored list changes nothing; [] clears it.
    echoed = client.get("/api/agents/helper").json()["agent"]
    kept = client.put("/api/agents/helper", echoed, content_type="application/json")
    assert kept.status_code == 200, kept.content
    assert Agent.objects.get(name="helper").parent_hooks == REQUIRED
    cleared = {**echoed, "parentHooks": []}
    emptied = client.put("/api/agents/helper", cleared, content_type="application/json")
    assert emptied.status_code == 200, emptied.content
    assert Agent.objects.get(name="helper").parent_hooks == []


def test_A7_the_studio_shows_parent_hooks_in_words_and_a_form_save_keeps_them(
    staff: Client, tmp_path: Path
) -> None:
    _run("import_definitions", str(_write(tmp_path, CHILD)))
    row = Agent.objects.get(name="helper")
    change = reverse("admin:agents_app_agent_change", args=[row.pk])
    structure = reverse("admin:agents_app_agent_structure", args=[row.pk])

    page = html.unescape(staff.get(change).content.decode())
    assert (
        "audit runs before the parent's own hooks: Keeps the audit trail. "
        "trace runs after the parent's own hooks: Traces each reply."
    ) in page
    drawn = html.unescape(staff.get(structure).content.decode())
    assert "Hook required on its parents" in drawn
    assert "runs after the parent's own hooks: Traces each reply" in drawn

    saved = post(staff, change, fill(read_form(staff, change), title="Helper"))
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    row.refresh_from_db()
    assert (row.title, row.parent_hooks) == ("Helper", REQUIRED)
