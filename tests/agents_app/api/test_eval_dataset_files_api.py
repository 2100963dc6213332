"""Issue #55: eval dataset files over the API. ``GET /api/evals/datasets/{name}/file`` answers
the documented file (JSON or JSON Lines, as an attachment); ``POST /api/evals/datasets/file``
takes it as a body or a form upload and makes the dataset hold exactly its cases, through the
reader the studio and ``import_eval_dataset`` use. A round trip into an emptied database gives
equal rows; a bad file is a 400 naming the case; the studio's permissions decide who may."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile

from agents_app.models import EvalCase, EvalDataset
from agents_app.services.evals import files as eval_files
from tests.agents_app.api.api_support import client_for

pytestmark = pytest.mark.django_db

CASES = [
    {
        "name": "says 42",
        "messages": [{"role": "user", "content": "What is the answer? <b>é</b>"}],
        "checks": [{"type": "contains", "text": "42"}],
        "env": {"REGION": "eu"},
        "notes": "The headline case.",
    },
    {
        "name": "a number",
        "messages": [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi, ask me anything."},
            {"role": "user", "content": "What is the answer?"},
        ],
        "checks": [
            {"type": "matches", "pattern": r"answer is \d+"},
            {"type": "stop_reason", "equals": "stop_on_response"},
        ],
    },
]


def _holding(user: Any, *codenames: str) -> Any:
    for codename in codenames:
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="agents_app", codename=codename)
        )
    return user


def _dataset() -> EvalDataset:
    data = {"format": eval_files.FORMAT, "version": 1, "name": "oracle-set", "cases": CASES}
    return eval_files.dataset_import({**data, "description": "Questions with one answer"})[0]


def _rows() -> list[tuple[Any, ...]]:
    return [
        (c.dataset.name, c.dataset.description, c.name, c.messages, c.checks, c.env, c.notes)
        for c in EvalCase.objects.select_related("dataset").order_by("id")
    ]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_a_dataset_exported_and_imported_over_the_api_has_equal_rows(
    make_user: Any, fmt: str
) -> None:
    _dataset()
    before = _rows()
    reader = client_for(_holding(make_user("reader"), "view_evaldataset"))
    response = reader.get(f"/api/evals/datasets/oracle-set/file?format={fmt}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == f"application/{fmt}; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="oracle-set.eval.{fmt}"'
    body = response.content
    if fmt == "jsonl":
        lines = body.decode().splitlines()
        assert len(lines) == 3  # the head, then a case a line
        assert json.loads(lines[0])["name"] == "oracle-set"
    EvalDataset.objects.all().delete()  # a fresh database, as a CI run starts from
    assert _rows() == []

    writer = client_for(_holding(make_user("writer"), "add_evaldataset", "change_evaldataset"))
    created = writer.post("/api/evals/datasets/file", body, content_type=f"application/{fmt}")
    assert created.status_code == 200, created.content
    assert created.json() == {
        "dataset": {"name": "oracle-set", "description": "Questions with one answer", "cases": 2},
        "added": 2,
        "updated": 0,
        "removed": 0,
    }
    assert _rows() == before
    again = reader.get("/api/evals/datasets/oracle-set/file")
    assert again.content.decode() == eval_files.dataset_text(EvalDataset.objects.get())

    # The same file as a form upload, with one case changed and one gone: replaced.
    data = json.loads(again.content)
    data["cases"] = [{**data["cases"][0], "notes": "changed"}]
    upload = SimpleUploadedFile("oracle-set.eval.json", json.dumps(data).encode())
    replaced = writer.post("/api/evals/datasets/file", {"file": upload})
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["dataset"]["cases"] == 1
    assert (replaced.json()["updated"], replaced.json()["removed"]) == (1, 1)
    assert [row[6] for row in _rows()] == ["changed"]


def test_a_bad_file_is_a_400_naming_the_case_and_the_check(make_user: Any) -> None:
    writer = client_for(_holding(make_user("writer"), "add_evaldataset", "change_evaldataset"))
    broken = [CASES[0], {**CASES[1], "name": "broken", "checks": [{"type": "contains"}]}]
    data = {"format": eval_files.FORMAT, "version": 1, "name": "oracle-set", "cases": broken}
    response = writer.post_json("/api/evals/datasets/file", data)
    assert response.status_code == 400
    assert response.json() == {
        "error": "Case 2: (“broken”) Check 1: the text to look for is required."
    }
    lines = eval_files.file_lines.to_lines(data).replace('"text": "42"', '"text": 42')
    response = writer.post("/api/evals/datasets/file", lines, content_type="application/jsonl")
    assert response.status_code == 400
    assert response.json()["error"].startswith("Case 1: (“says 42”) Check 1: the text")
    for body, words in (
        ("", "Send the dataset file: as the body (JSON or JSON Lines)"),
        ("{not json", "This is not a JSON dataset file (line 1, column 2)"),
        ('{"name": "x"}', 'This is not an eval dataset file: it needs "format"'),
        ('{"name": "x\\ud800"}', "The file: name: Text may not contain"),
    ):
        response = writer.post("/api/evals/datasets/file", body, content_type="application/json")
        assert response.status_code == 400, body
        assert response.json()["error"].startswith(words), response.json()
    empty = writer.post("/api/evals/datasets/file", {"other": "x"})
    assert empty.json() == {"error": "Send the dataset file as the form field named file."}
    assert not EvalDataset.objects.exists()  # nothing written by a refused file


def test_the_studio_permissions_decide_who_may(make_user: Any) -> None:
    _dataset()
    body = eval_files.dataset_text(EvalDataset.objects.get())
    nobody = client_for(make_user("nobody"))
    assert nobody.get("/api/evals/datasets/oracle-set/file").status_code == 403
    # Adding alone is not enough: the studio's upload also changes a dataset it replaces.
    adder = client_for(_holding(make_user("adder"), "add_evaldataset", "view_evaldataset"))
    refused = adder.post("/api/evals/datasets/file", body, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json() == {
        "error": "Forbidden: Admin access required (permission agents_app.add_evaldataset "
        "and agents_app.change_evaldataset)"
    }
    missing = adder.get("/api/evals/datasets/no-such-set/file")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Eval dataset not found: no-such-set"}
