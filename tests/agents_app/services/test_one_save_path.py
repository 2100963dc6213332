"""One definition save path (issue #53): every writer of agents, prompts and models (the
studio's forms, the API, import, the demo, drafts, restores) goes through
``services.definitions.saves.save_definitions``; a second path fails here."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from agents_app.admin.versions import VersionedAdmin
from agents_app.models import Agent, DefinitionVersion, LanguageModel, Prompt
from agents_app.services.definitions import saves
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form

APP = Path(__file__).resolve().parents[3] / "agents_app"
# The modules that write definition rows: the rows ↔ definitions functions and the save.
WRITERS = {"services/definitions/rows.py", "services/definitions/saves.py"}
ROW_WRITERS = {
    "agent_from_definition",
    "prompt_from_definition",
    "model_from_definition",
    "link_prompt_parts",
    "link_model_fallbacks",
    "record_many",
}
DEFINITION_TABLES = {
    "Agent",
    "Prompt",
    "LanguageModel",
    "PromptPart",
    "PromptTool",
    "ModelFallback",
}
WRITES = {"create", "update_or_create", "get_or_create", "bulk_create", "update", "delete"}


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _table_of_write(call: ast.Call) -> str | None:
    """``Agent.objects[.filter(…)].update(…)`` → "Agent"."""
    if _name(call.func) not in WRITES or not isinstance(call.func, ast.Attribute):
        return None
    node: Any = call.func.value
    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            return getattr(node.value, "id", None)
        node = node.func if isinstance(node, ast.Call) else node.value
    return None


def test_only_the_definition_save_writes_definition_rows_or_records_versions() -> None:
    found = []
    for path in APP.rglob("*.py"):
        where = str(path.relative_to(APP))
        if where.startswith("migrations/") or where in WRITERS:
            continue
        for call in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            if _name(call.func) in ROW_WRITERS:
                found.append(f"{where}:{call.lineno} {_name(call.func)}")
            table = _table_of_write(call)
            if table in DEFINITION_TABLES:
                found.append(f"{where}:{call.lineno} {table}.objects…{_name(call.func)}")
    assert found == []


def test_the_studio_admins_of_definitions_save_only_through_the_one_save() -> None:
    for model in (Agent, Prompt, LanguageModel):
        model_admin = admin.site._registry[model]
        assert isinstance(model_admin, VersionedAdmin), model
        for method in ("save_model", "save_related", "save_form"):
            mine = getattr(type(model_admin), method)
            assert mine is getattr(VersionedAdmin, method, None) or (
                method == "save_form" and mine is admin.ModelAdmin.save_form
            ), f"{type(model_admin).__name__}.{method} is a second save path"


@pytest.mark.django_db
def test_a_studio_form_save_is_save_definitions_and_records_one_studio_version(
    client: Client, ops: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    real = saves.save_definitions

    def spy(items: Any, **kwargs: Any) -> Any:
        calls.append({"names": [d.name for _, d in items], **kwargs})
        return real(items, **kwargs)

    monkeypatch.setattr(saves, "save_definitions", spy)
    client.force_login(ops)
    add = reverse("admin:agents_app_languagemodel_add")
    data = fill(read_form(client, add), name="scripted", provider="test", model="scripted-v1")
    response = post(client, add, data)
    assert response.status_code == 302, errors_of(response)
    model = LanguageModel.objects.get(name="scripted")

    change = reverse("admin:agents_app_languagemodel_change", args=[model.pk])
    data = fill(read_form(client, change), name="scripted_two", change_note="renamed")
    response = post(client, change, data)
    assert response.status_code == 302, errors_of(response)

    assert [c["names"] for c in calls] == [["scripted"], ["scripted_two"]]
    assert {c["source"] for c in calls} == {DefinitionVersion.Source.ADMIN}
    # The rename moved the row (its id, and so every reference, kept) rather than adding one.
    assert list(
        LanguageModel.objects.filter(name__startswith="scripted").values_list("pk", "name")
    ) == [(model.pk, "scripted_two")]
    notes = DefinitionVersion.objects.filter(kind="models").values_list("name", "note")
    assert list(notes.order_by("created_at")) == [("scripted", ""), ("scripted_two", "renamed")]
