"""Definition versions: one version per save that changes something, on every write path
(service, HTTP API, import, admin), restore, pins for sessions, the diff rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.base.errors import Invalid
from agents_app.models import Agent, DefinitionVersion, Prompt, Thread, ThreadSession
from agents_app.pages.definition_diff import changed_count, readable_lines, side_by_side
from agents_app.services.definitions import saves as definition_saves
from agents_app.services.definitions import versions
from agents_app.services.definitions.files import definitions_export, definitions_import
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.agents_app.admin.admin_pages import fill, post, read_form
from tests.agents_app.api.api_support import _api_hosts, as_, client_for  # noqa: F401
from tests.agents_app.start_meter import CallCounter

pytestmark = pytest.mark.django_db


def model(name: str = "m1", content: str = "Hi.", **kw: Any) -> ModelDefinition:
    return ModelDefinition(
        name=name, provider="test", model="scripted", script=[{"content": content}], **kw
    )


def prompt(name: str = "p1", text: str = "Be brief.", **kw: Any) -> PromptDefinition:
    return PromptDefinition(name=name, model=kw.pop("model", "m1"), prompt=text, **kw)


def agent(name: str = "a1", prompt_name: str = "p1") -> AgentDefinition:
    return AgentDefinition(name=name, side_a=SideConfig(prompt=prompt_name))


def save(*defs: Any, **kw: Any) -> None:
    save_definitions([(f"x/{d.name}", d) for d in defs], strict_code_names=False, **kw)


def numbers(kind: str, name: str) -> list[int]:
    return [v.number for v in versions.history(kind, name)]


@pytest.fixture
def base() -> None:
    save(model(), prompt(), agent())


def test_each_save_records_one_version_per_definition_it_saves(base: None) -> None:
    assert numbers("models", "m1") == [1]
    assert numbers("prompts", "p1") == [1]
    assert numbers("agents", "a1") == [1]
    v1 = versions.latest("prompts", "p1")
    assert v1 is not None and v1.definition == prompt().dump()
    assert v1.source == "import"


def test_a_save_that_changes_nothing_records_no_version(base: None) -> None:
    save(model(), prompt(), agent())
    assert numbers("prompts", "p1") == [1]
    assert DefinitionVersion.objects.count() == 3


def test_a_changed_prompt_gets_the_next_number_with_who_and_the_note(base: None, ops: Any) -> None:
    save(prompt(text="Be very brief."), author=ops, note="Shorter answers", source="api")
    assert numbers("prompts", "p1") == [2, 1]
    assert numbers("agents", "a1") == [1]  # the agent itself did not change
    v2 = versions.latest("prompts", "p1")
    assert v2 is not None
    assert (v2.author, v2.author_name, v2.note, v2.source) == (
        ops,
        "ops",
        "Shorter answers",
        "api",
    )
    assert v2.definition["prompt"] == "Be very brief."


def test_versions_are_immutable(base: None) -> None:
    v1 = versions.latest("prompts", "p1")
    assert v1 is not None
    v1.note = "rewritten"
    with pytest.raises(ValueError, match="immutable"):
        v1.save()


def test_the_api_write_records_one_version_with_the_key_owner_and_version_note(
    base: None, ops: Any
) -> None:
    client = client_for(ops)
    body = {"definition": {**prompt(text="API text").dump(), "name": "p1"}, "versionNote": "API"}
    response = client.put("/api/prompts/p1", body, content_type="application/json")
    assert response.status_code == 200, response.content
    assert numbers("prompts", "p1") == [2, 1]
    v2 = versions.latest("prompts", "p1")
    assert v2 is not None and (v2.author, v2.note, v2.source) == (ops, "API", "api")
    # The same body again changes nothing: no third version.
    client.put("/api/prompts/p1", body, content_type="application/json")
    assert numbers("prompts", "p1") == [2, 1]


def test_the_api_refuses_a_version_note_that_is_not_text(base: None, ops: Any) -> None:
    response = client_for(ops).put(
        "/api/prompts/p1", {"versionNote": 3}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "versionNote" in response.json()["error"]


def test_import_records_versions_and_reimport_records_none(base: None, tmp_path: Path) -> None:
    definitions_export(directory=tmp_path)
    data = json.loads((tmp_path / "prompts" / "p1.json").read_text())
    data["prompt"] = "Imported text"
    (tmp_path / "prompts" / "p1.json").write_text(json.dumps(data))
    definitions_import(directory=tmp_path)
    v2 = versions.latest("prompts", "p1")
    assert v2 is not None and v2.number == 2 and v2.source == "import"
    assert v2.note == f"Imported from {tmp_path.name}/"
    definitions_import(directory=tmp_path)
    assert numbers("prompts", "p1") == [2, 1]


def test_export_with_history_writes_every_version_beside_the_definitions(
    base: None, tmp_path: Path
) -> None:
    save(prompt(text="Second"), note="two")
    definitions_export(directory=tmp_path, history=True)
    history = json.loads((tmp_path / ".history" / "prompts" / "p1.json").read_text())
    assert [(v["number"], v["note"]) for v in history] == [(1, ""), (2, "two")]
    assert history[0]["definition"]["prompt"] == "Be brief."
    # The history folder is hidden: the same directory imports as before.
    definitions_import(directory=tmp_path)


def test_restore_saves_the_old_version_as_a_new_one(base: None, ops: Any) -> None:
    save(prompt(text="Second"))
    restored = definition_saves.restore("prompts", "p1", 1, author=ops)
    assert restored.number == 3 and restored.note == "Restored version 1"
    assert restored.source == "restore" and restored.author == ops
    assert restored.definition == prompt().dump()
    assert Prompt.objects.get(name="p1").text == "Be brief."
    with pytest.raises(Invalid, match="nothing to restore"):
        definition_saves.restore("prompts", "p1", 1)


def test_restore_is_refused_when_the_old_version_no_longer_validates(base: None) -> None:
    save(model("m2"))
    save(prompt(model="m2"))
    save(prompt(model="m1"))
    from agents_app.models import LanguageModel

    LanguageModel.objects.filter(name="m2").delete()
    with pytest.raises(Invalid, match="cannot be restored"):
        definition_saves.restore("prompts", "p1", 2)


# --- the admin --------------------------------------------------------------------------------


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_an_admin_save_records_one_version_with_its_change_note(base: None, staff: Client) -> None:
    p = Prompt.objects.get(name="p1")
    url = reverse("admin:agents_app_prompt_change", args=[p.pk])
    data = fill(read_form(staff, url), text="Edited in the studio.", change_note="Friendlier")
    response = post(staff, url, data)
    assert response.status_code == 302, response.content[:2000]
    assert numbers("prompts", "p1") == [2, 1]
    v2 = versions.latest("prompts", "p1")
    assert v2 is not None
    assert (v2.note, v2.author_name, v2.source) == ("Friendlier", "ops", "admin")
    assert v2.definition["prompt"] == "Edited in the studio."
    # Saving the untouched form again records nothing.
    post(staff, url, read_form(staff, url))
    assert numbers("prompts", "p1") == [2, 1]


def test_admin_saves_of_agents_and_models_record_versions(base: None, staff: Client) -> None:
    a = Agent.objects.get(name="a1")
    url = reverse("admin:agents_app_agent_change", args=[a.pk])
    response = post(staff, url, fill(read_form(staff, url), title="Support", change_note="t"))
    assert response.status_code == 302
    assert numbers("agents", "a1") == [2, 1]
    m = a.side_a_prompt.model
    url = reverse("admin:agents_app_languagemodel_change", args=[m.pk])
    response = post(staff, url, fill(read_form(staff, url), input_price="1.5"))
    assert response.status_code == 302
    assert numbers("models", "m1") == [2, 1]


def test_history_diff_and_restore_pages(base: None, staff: Client) -> None:
    save(prompt(text="Line one\nLine two changed"), note="second")
    p = Prompt.objects.get(name="p1")
    history_url = reverse("admin:agents_app_prompt_versions", args=[p.pk])
    page = staff.get(history_url).content.decode()
    assert "Version 2" in page and "Version 1" in page and "second" in page
    change = staff.get(reverse("admin:agents_app_prompt_change", args=[p.pk])).content.decode()
    assert history_url in change  # the "Versions" button
    diff = staff.get(reverse("admin:agents_app_prompt_version", args=[p.pk, 2]))
    html = diff.content.decode()
    assert diff.status_code == 200
    assert "studio-diff-changed" in html and "<ins>" in html and "<del>" in html
    assert "style=" not in html.split('id="content-main"')[1]  # CSP: classes only
    current = staff.get(reverse("admin:agents_app_prompt_version", args=[p.pk, 1]) + "?against=2")
    assert current.status_code == 200 and "Version 2" in current.content.decode()
    # Stored JSON keeps no key order (jsonb): the diff still pairs the same lines.
    same = staff.get(
        reverse("admin:agents_app_prompt_version", args=[p.pk, 2]) + "?against=current"
    )
    assert "No differences" in same.content.decode()
    first = staff.get(reverse("admin:agents_app_prompt_version", args=[p.pk, 1])).content.decode()
    assert "nothing before it" in first and "studio-diff-old" not in first
    missing = staff.get(reverse("admin:agents_app_prompt_version", args=[p.pk, 9]))
    assert missing.status_code == 404
    restore = reverse("admin:agents_app_prompt_version_restore", args=[p.pk, 1])
    assert staff.get(restore).status_code == 405
    response = staff.post(restore)
    assert response.status_code == 302
    assert numbers("prompts", "p1") == [3, 2, 1]
    assert Prompt.objects.get(name="p1").text == "Be brief."


def test_people_who_may_only_view_cannot_restore(
    base: None, client: Client, make_user: Any
) -> None:
    from django.contrib.auth.models import Permission

    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_prompt"))
    client.force_login(viewer)
    save(prompt(text="Second"))
    p = Prompt.objects.get(name="p1")
    page = client.get(reverse("admin:agents_app_prompt_versions", args=[p.pk]))
    assert page.status_code == 200 and "Restore" not in page.content.decode()
    response = client.post(reverse("admin:agents_app_prompt_version_restore", args=[p.pk, 1]))
    assert response.status_code == 403
    assert numbers("prompts", "p1") == [2, 1]


# --- pins ---------------------------------------------------------------------------------------


def test_pins_reach_side_prompts_includes_sub_prompts_subagents_models_and_fallbacks() -> None:
    save(model("fb"), model("m1", fallbacks=["fb"]), model("m2"))
    save(prompt("style", model="m2"), prompt("sub", model="m2"))
    save(prompt("child_p"), agent("child", "child_p"))
    save(
        PromptDefinition(
            name="p1",
            model="m1",
            prompt=[{"type": "include", "prompt": "style"}, {"type": "text", "content": "Hi"}],
            tools=["sub", "child", "lookup_order"],
        ),
        agent(),
    )
    pins = versions.compute_pins("a1")
    assert pins.versions == {
        "agents": {"a1": 1, "child": 1},
        "prompts": {"p1": 1, "style": 1, "sub": 1, "child_p": 1},
        "models": {"m1": 1, "fb": 1, "m2": 1},
    }


def _session(agent_name: str = "a1") -> ThreadSession:
    a = Agent.objects.get(name=agent_name)
    thread = Thread.objects.create(agent=a, origin_agent=a)
    return ThreadSession.objects.create(thread=thread, status="running")


def test_a_session_keeps_the_versions_it_started_with(base: None) -> None:
    session = _session()
    pins = versions.session_pins(str(session.pk))
    assert pins is not None and pins.versions["prompts"] == {"p1": 1}
    # The fixed statement stored them as the field stores JSON, once.
    session.refresh_from_db()
    assert session.definition_versions == pins.as_json()
    save(prompt(text="Edited while it runs"))
    again = versions.session_pins(str(session.pk))  # e.g. resumed on another worker
    assert again is not None and again.versions["prompts"] == {"p1": 1}
    assert versions.pinned_definition(again, "prompts", "p1") == prompt().dump()
    newer = versions.session_pins(str(_session().pk))
    assert newer is not None and newer.versions["prompts"] == {"p1": 2}
    assert newer.stamp("a1", "p1", "m1") == {"agents/a1": 1, "prompts/p1": 2, "models/m1": 1}


def test_sessions_reuse_pins_until_anything_they_were_computed_from_changes(
    base: None,
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents_app.models import PromptTool

    first = versions.session_pins(str(_session().pk))
    assert first is not None and first.versions["prompts"] == {"p1": 1}
    second = str(_session().pk)
    with CaptureQueriesContext(connection) as cached:
        again = versions.session_pins(second)
    assert again is not None and again.loaded == first.loaded
    assert again.versions == first.versions
    # The session row with the stamp, the pin's write: no definition was read again.
    assert len(cached) == 2, [q["sql"] for q in cached]
    save(prompt(text="Edited"))  # a save: a new version and a newer updated_at
    edited = versions.session_pins(str(_session().pk))
    assert edited is not None and edited.versions["prompts"] == {"p1": 2}
    assert versions.pinned_definition(edited, "prompts", "p1")["prompt"] == "Edited"
    # A row of a table the prompt's dump is built from (its tools) changes the stamp too.
    PromptTool.objects.create(prompt=Prompt.objects.get(name="p1"), name="lookup", position=0)
    fourth = str(_session().pk)
    with CaptureQueriesContext(connection) as recomputed:
        versions.session_pins(fourth)
    assert len(recomputed) > 2


def test_pins_from_the_cache_are_each_sessions_own(base: None) -> None:
    """The kept answer is decoded afresh for every session (issue #58; a deep copy before):
    what one session does to its definitions never reaches the next."""
    first = versions.session_pins(str(_session().pk))
    assert first is not None
    second = str(_session().pk)
    with CallCounter() as counter:
        cached = versions.session_pins(second)
    assert cached is not None and cached.loaded == first.loaded
    # Decoded from the kept JSON text, not copied object by object (62 calls a start before).
    assert not [k for k in counter.calls if k.startswith("copy:")], counter.calls
    cached.loaded[("prompts", "p1")]["prompt"] = "Changed in one session"
    cached.versions["prompts"]["p1"] = 99
    again = versions.session_pins(str(_session().pk))
    assert again is not None and again.versions["prompts"] == {"p1": 1}
    assert again.loaded == first.loaded
    assert again.loaded[("prompts", "p1")]["prompt"] == "Be brief."


def test_a_definition_changed_outside_the_save_paths_is_recorded_when_a_session_starts(
    base: None,
) -> None:
    Prompt.objects.filter(name="p1").update(text="Changed by hand")
    pins = versions.session_pins(str(_session().pk))
    assert pins is not None and pins.versions["prompts"] == {"p1": 2}
    v2 = versions.latest("prompts", "p1")
    assert (
        v2 is not None
        and v2.source == "baseline"
        and v2.definition["prompt"] == ("Changed by hand")
    )


# --- the diff -------------------------------------------------------------------------------------


def test_readable_lines_split_text_and_nest_keys() -> None:
    lines = readable_lines({"name": "p", "prompt": "one\ntwo", "tools": ["a", {"name": "b"}]})
    assert lines == ["name: p", "prompt:", "  | one", "  | two", "tools:", "  - a", "  - name: b"]


def test_side_by_side_marks_changed_words_and_folds_unchanged_runs() -> None:
    old = {"name": "p", "prompt": "\n".join(f"line {i}" for i in range(20))}
    new = {"name": "p", "prompt": old["prompt"].replace("line 10", "line ten")}
    rows = side_by_side(old, new)
    assert changed_count(rows) == 1
    changed = next(r for r in rows if r.kind == "changed")
    assert [s.text for s in changed.left if s.changed] == ["10"]
    assert [s.text for s in changed.right if s.changed] == ["ten"]
    assert [r.kind for r in rows].count("skipped") == 2
    assert side_by_side(None, {"a": 1})[0].kind == "added"


def test_secret_env_values_never_reach_a_version_or_its_pages(base: None, staff: Client) -> None:
    save(prompt(env={"TOKEN": "canary-secret-123"}), note="with a secret")
    v2 = versions.latest("prompts", "p1")
    assert v2 is not None and v2.definition["env"] == {"TOKEN": None}
    p = Prompt.objects.get(name="p1")
    pages = [
        reverse("admin:agents_app_prompt_versions", args=[p.pk]),
        reverse("admin:agents_app_prompt_version", args=[p.pk, 2]),
        reverse("admin:agents_app_prompt_version", args=[p.pk, 1]) + "?against=current",
    ]
    for url in pages:
        page = staff.get(url)
        assert page.status_code == 200
        assert "canary-secret-123" not in page.content.decode()
    # Restoring a version keeps the stored secret (null in a definition keeps the value).
    save(prompt(env={"TOKEN": None, "OTHER": "x"}))
    definition_saves.restore("prompts", "p1", 2)
    from agents_app.models import EnvValue

    assert EnvValue.objects.get(prompt=p, key="TOKEN").value == "canary-secret-123"


def _rows_read(plan: dict[str, Any], table: str) -> int:
    """Rows the plan's nodes read from ``table`` (EXPLAIN ANALYZE's actual rows × loops)."""
    own = plan["Actual Rows"] * plan["Actual Loops"] if plan.get("Relation Name") == table else 0
    return int(own) + sum(_rows_read(child, table) for child in plan.get("Plans", []))


def test_the_definitions_stamp_reads_one_row_of_the_version_history_however_long(
    base: None,
) -> None:
    """Every session start reads the stamp: counting the versions read the whole history each
    time (3.1 ms at 22,000 versions); the newest id is one probe of the primary key."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("EXPLAIN ANALYZE's row counts are PostgreSQL's (SQLite has no planner output)")
    DefinitionVersion.objects.bulk_create(
        DefinitionVersion(kind="prompts", name=f"old{i % 50}", number=i + 1, definition={})
        for i in range(3000)
    )
    table = DefinitionVersion._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {table}")
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) SELECT " + versions._stamp_columns("%s"), [None]
        )
        plan = cursor.fetchone()[0][0]["Plan"]
    assert _rows_read(plan, table) <= 1, plan
