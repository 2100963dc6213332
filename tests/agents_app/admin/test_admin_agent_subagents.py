"""Issue #54, the studio's door for spec 0.2.0 side subagents: each prompt-backed side of an
agent's page has "Subagents of side A/B" rows (agents_app/forms/agent_subagents.py). A row saved
by form is stored and exported exactly as the definition API stores the same relationship;
mistakes come back as sentences on the row and field, never as paths; a 0.1.0 agent shows the
rows disabled and refuses posted ones; what people typed is escaped when shown again."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from agents_app.models import Agent
from tests.agents_app.admin.admin_pages import fill, post, read_form, set_rows
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

HELPER = {
    "name": "helper",
    "title": "Helper",
    "exposeAsTool": True,
    "toolDescription": "Looks things up",
    "sideA": {"prompt": "helper_prompt"},
    "sideB": {"human": True},
}
BOSS = {"name": "boss", "sideA": {"prompt": "boss_prompt"}, "sideB": {"human": True}}
RELATIONSHIP = {
    "agent": "helper",
    "as": "researcher",
    "description": "Digs up sources",
    "blocking": True,
    "maxInstances": 2,
    "optional": "RESEARCH_ON",
    "scopedEnv": ["REGION", "LANG"],
    "parentCommunication": "explicit",
}
# The same relationship as the form's row fields.
ROW = {
    "agent": "helper",
    "as_name": "researcher",
    "description": "Digs up sources",
    "blocking": True,
    "max_instances": "2",
    "optional": "RESEARCH_ON",
    "scoped_env": "REGION, LANG",
    "parent_communication": "explicit",
}
A_ROWS = "side_a_subagents"


def _import(root: Path, **agents: dict[str, Any]) -> None:
    files = {
        "models/m": {"name": "m", "provider": "test", "model": "scripted"},
        "prompts/boss_prompt": {"name": "boss_prompt", "model": "m", "prompt": "You lead."},
        "prompts/helper_prompt": {"name": "helper_prompt", "model": "m", "prompt": "You help."},
        "agents/helper": HELPER,
        "agents/boss": BOSS,
        **{f"agents/{name}": data for name, data in agents.items()},
    }
    for label, data in files.items():
        path = root / f"{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    call_command("import_definitions", str(root), stdout=io.StringIO(), stderr=io.StringIO())


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _url(name: str) -> str:
    return f"/admin/agents_app/agent/{Agent.objects.get(name=name).pk}/change/"


def _rows_form(response: Any, side: str = "a") -> Any:
    return response.context["adminform"].form.subagent_sets[side]


def test_A4_a_subagent_added_by_form_is_stored_and_exported_as_the_api_stores_it(
    tmp_path: Path, staff: Client, as_: Any, ops: Any
) -> None:
    _import(tmp_path / "src", twin={**BOSS, "name": "twin"})
    data = set_rows(read_form(staff, _url("boss")), A_ROWS, [ROW])

    response = post(staff, _url("boss"), data)

    assert response.status_code == 302, response.context and _rows_form(response).errors
    by_form = Agent.objects.get(name="boss").side_a_subagents
    assert by_form == [RELATIONSHIP]
    twin = {**BOSS, "name": "twin", "sideA": {"prompt": "boss_prompt", "subagents": [RELATIONSHIP]}}
    by_api = as_(ops).put("/api/agents/twin", {"definition": twin}, content_type="application/json")
    assert by_api.status_code == 200, by_api.content
    assert Agent.objects.get(name="twin").side_a_subagents == by_form
    call_command("export_definitions", str(tmp_path / "out"), stdout=io.StringIO())
    exported = {
        name: json.loads((tmp_path / "out" / "agents" / f"{name}.json").read_text())
        for name in ("boss", "twin")
    }
    assert {**exported["twin"], "name": "boss"} == exported["boss"]
    assert exported["boss"]["sideA"]["subagents"] == [RELATIONSHIP]


def test_A4_stored_rows_are_shown_as_rows_and_a_ticked_delete_removes_one(
    tmp_path: Path, staff: Client
) -> None:
    second = {"agent": "helper", "as": "checker", "hidden": True, "immediate": True}
    boss = {**BOSS, "sideA": {"prompt": "boss_prompt", "subagents": [RELATIONSHIP, second]}}
    _import(tmp_path, boss=boss)
    data = read_form(staff, _url("boss"))
    assert data[f"{A_ROWS}-0-as_name"] == "researcher"
    assert data[f"{A_ROWS}-0-scoped_env"] == "REGION, LANG"
    assert data[f"{A_ROWS}-0-parent_communication"] == "explicit"
    assert (data[f"{A_ROWS}-1-hidden"], data[f"{A_ROWS}-1-immediate"]) == ("on", "on")
    assert f"{A_ROWS}-1-blocking" not in data  # unticked: not sent

    response = post(staff, _url("boss"), fill(data, **{f"{A_ROWS}-0-DELETE": True}))

    assert response.status_code == 302
    assert Agent.objects.get(name="boss").side_a_subagents == [second]


def test_A4_mistakes_are_sentences_on_the_row_and_field_and_nothing_is_saved(
    tmp_path: Path, staff: Client
) -> None:
    _import(tmp_path)
    rows = [ROW, {**ROW, "max_instances": "0"}, {"agent": "helper", "as_name": "researcher"}]
    data = set_rows(read_form(staff, _url("boss")), A_ROWS, rows)

    response = post(staff, _url("boss"), data)

    assert response.status_code == 200
    assert _rows_form(response).errors[1] == {
        "max_instances": ["Ensure this value is greater than or equal to 1."]
    }
    page = response.content.decode()
    assert "Side A&#x27;s subagents: correct the rows marked under Subagents of side A." in page
    # Fixed, the rows meet the definition rules: the duplicate name is said on row 3's Name.
    data[f"{A_ROWS}-1-max_instances"] = "1"
    data[f"{A_ROWS}-1-as_name"] = "second"

    response = post(staff, _url("boss"), data)

    assert response.status_code == 200
    errors = _rows_form(response).errors
    assert errors[:2] == [{}, {}]
    assert errors[2]["as_name"][0].startswith(
        "Two relationships of this side are called 'researcher': give one another name"
    )
    page = response.content.decode()
    assert "sideA.subagents" not in page and "side_a_subagents.2" not in page
    assert Agent.objects.get(name="boss").side_a_subagents == []


def test_A4_a_target_no_longer_exposed_is_named_on_its_row(tmp_path: Path, staff: Client) -> None:
    boss = {**BOSS, "sideA": {"prompt": "boss_prompt", "subagents": [{"agent": "helper"}]}}
    _import(tmp_path, boss=boss)
    Agent.objects.filter(name="helper").update(expose_as_tool=False)
    data = read_form(staff, _url("boss"))

    response = post(staff, _url("boss"), data)

    assert response.status_code == 200
    assert "helper (not exposed as a tool)" in response.content.decode()
    assert (
        _rows_form(response)
        .errors[0]["agent"][0]
        .startswith(
            "Agent 'helper' is not exposed as a tool: a subagent target needs exposeAsTool: true"
        )
    )


def test_A4_the_person_s_side_refuses_rows_in_words(tmp_path: Path, staff: Client) -> None:
    _import(tmp_path)
    data = set_rows(read_form(staff, _url("boss")), "side_b_subagents", [{"agent": "helper"}])

    response = post(staff, _url("boss"), data)

    assert response.status_code == 200
    assert (
        "A person takes this side's turns, and only a prompt's model can create subagents; "
        "move these relationships to the side backed by a prompt."
    ) in _rows_form(response, "b").non_form_errors()
    assert Agent.objects.get(name="boss").side_b_subagents == []


def test_A4_a_0_1_0_agent_shows_the_rows_disabled_and_refuses_posted_ones(
    tmp_path: Path, staff: Client
) -> None:
    _import(tmp_path, old={"name": "old", "type": "ai_human", "sideA": {"prompt": "boss_prompt"}})
    page = staff.get(_url("old")).content.decode()
    assert '<fieldset class="studio-subagent-rows" disabled>' in page
    assert "Subagents on a side need spec 0.2.0" in page
    # A page posted as the browser sends it (disabled rows are not sent) saves as before.
    data = read_form(staff, _url("old"))
    assert post(staff, _url("old"), fill(data, title="Old")).status_code == 302
    # Rows posted anyway are refused with the sentence, and nothing changes.
    data = set_rows(read_form(staff, _url("old")), A_ROWS, [{"agent": "helper"}])

    response = post(staff, _url("old"), data)

    assert response.status_code == 200
    assert list(_rows_form(response).non_form_errors()) == [
        "Starting subagents from a side needs spec 0.2.0: choose it under Spec (max session "
        "turns then counts exchanges)."
    ]
    old = Agent.objects.get(name="old")
    assert (old.spec_version, old.side_a_subagents) == ("0.1.0", [])


def test_A4_what_people_typed_is_escaped_when_the_rows_are_shown(
    tmp_path: Path, staff: Client
) -> None:
    _import(tmp_path)
    hostile = "<script>alert(1)</script>"
    data = set_rows(read_form(staff, _url("boss")), A_ROWS, [{**ROW, "description": hostile}])
    assert post(staff, _url("boss"), data).status_code == 302

    page = staff.get(_url("boss")).content.decode()

    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert hostile not in page
    structure = staff.get(_url("boss").replace("/change/", "/structure/")).content.decode()
    assert "researcher" in structure and hostile not in structure


def test_A4_a_post_without_rows_keeps_the_stored_relationships(
    tmp_path: Path, staff: Client
) -> None:
    boss = {**BOSS, "sideA": {"prompt": "boss_prompt", "subagents": [RELATIONSHIP]}}
    _import(tmp_path, boss=boss)
    data = {k: v for k, v in read_form(staff, _url("boss")).items() if "_subagents-" not in k}

    response = post(staff, _url("boss"), fill(data, title="Boss"))

    assert response.status_code == 302
    assert Agent.objects.get(name="boss").side_a_subagents == [RELATIONSHIP]


def test_A4_the_structure_page_shows_each_side_s_subagents(tmp_path: Path, staff: Client) -> None:
    boss = {**BOSS, "sideA": {"prompt": "boss_prompt", "subagents": [RELATIONSHIP]}}
    _import(tmp_path, boss=boss)

    page = staff.get(_url("boss").replace("/change/", "/structure/")).content.decode()

    assert "Subagent (side A)" in page
    assert "as researcher: Digs up sources" in page


def test_A4_a_view_only_page_shows_the_relationships_in_words_without_rows(
    tmp_path: Path, client: Client, make_user: Any
) -> None:
    from django.contrib.auth.models import Permission

    boss = {**BOSS, "sideA": {"prompt": "boss_prompt", "subagents": [RELATIONSHIP]}}
    _import(tmp_path, boss=boss)
    viewer = make_user("viewer")
    viewer.is_staff = True  # staff with only the view permissions, no group
    viewer.save()
    viewer.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client.force_login(viewer)

    response = client.get(_url("boss"))

    assert response.status_code == 200
    page = response.content.decode()
    assert "Subagents of side A" in page
    assert "researcher → helper (blocking, max 2)" in page
    assert 'name="side_a_subagents-0-agent"' not in page  # nothing to fill in
