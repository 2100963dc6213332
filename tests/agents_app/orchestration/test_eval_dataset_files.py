"""Issue #55 item 2: eval datasets as files. ``export_eval_dataset`` writes a dataset as JSON,
``import_eval_dataset`` reads it back (the round trip is exact), a file over an existing
dataset makes it hold the file's cases, a mistake in a file names the case and the check,
``run_eval --dataset-file`` runs one from an empty database and exits by its result, and
the studio downloads and uploads the same file."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from agents_app.models import EvalCase, EvalDataset, EvalResult
from agents_app.services.evals import checks as evals
from agents_app.services.evals import files as eval_files
from tests.agents_app.api.api_support import _api_hosts  # noqa: F401 (executor off: run_eval runs)
from tests.agents_app.orchestration.test_evals import _oracle

pytestmark = pytest.mark.django_db(transaction=True)

CASES = [
    {
        "name": "says 42",
        "messages": [{"role": "user", "content": "What is the answer?"}],
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


def _file(tmp_path: Path, cases: list[dict[str, Any]], name: str = "oracle-set") -> Path:
    path = tmp_path / f"{name}.eval.json"
    data = {"format": eval_files.FORMAT, "version": 1, "name": name, "cases": cases}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _call(*args: str) -> tuple[str, str | None]:
    out = StringIO()
    try:
        call_command(*args, stdout=out, stderr=StringIO())
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), None


def test_export_and_import_round_trip(tmp_path: Path) -> None:
    dataset = EvalDataset.objects.create(name="oracle-set", description="Questions with answers")
    for case in CASES:
        evals.case_save(dataset=dataset, **case)
    first = tmp_path / "first.json"
    assert _call("export_eval_dataset", "oracle-set", "--out", str(first))[1] is None
    written = json.loads(first.read_text())
    assert written["format"] == "standard-agents/eval-dataset" and written["cases"] == CASES
    dataset.delete()
    out, error = _call("import_eval_dataset", str(first))
    assert error is None and "2 cases added, none updated, none removed" in out
    again, _ = _call("export_eval_dataset", "oracle-set")
    assert again == first.read_text()


def test_json_lines_round_trip_through_the_commands(tmp_path: Path) -> None:
    dataset = EvalDataset.objects.create(name="oracle-set", description="Questions with answers")
    for case in CASES:
        evals.case_save(dataset=dataset, **case)
    as_json, _ = _call("export_eval_dataset", "oracle-set")
    lines = tmp_path / "oracle-set.eval.jsonl"
    assert (
        _call("export_eval_dataset", "oracle-set", "--format", "jsonl", "--out", str(lines))[1]
        is None
    )
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    assert rows[0]["name"] == "oracle-set" and "cases" not in rows[0] and rows[1:] == CASES
    dataset.delete()
    out, error = _call("import_eval_dataset", str(lines))
    assert error is None and "2 cases added" in out
    assert _call("export_eval_dataset", "oracle-set")[0] == as_json
    lines.write_text(lines.read_text() + "{not json\n")
    assert f"{lines}: Line 4 is not JSON" in str(_call("import_eval_dataset", str(lines))[1])


def test_a_file_over_a_dataset_makes_it_hold_the_files_cases(tmp_path: Path) -> None:
    _oracle()
    dataset = EvalDataset.objects.create(name="oracle-set")
    for case in CASES:
        evals.case_save(dataset=dataset, **case)
    _call("run_eval", "--dataset", "oracle-set", "--agent", "oracle", "--threshold", "0")
    kept = EvalCase.objects.get(name="says 42")
    changed = [{**CASES[0], "checks": [{"type": "contains", "text": "answer"}]}]
    changed.append({"name": "new", "messages": CASES[0]["messages"], "checks": []})
    out, error = _call("import_eval_dataset", str(_file(tmp_path, changed)))
    assert error is None and "1 case added, 1 updated, 1 removed" in out
    assert list(dataset.cases.values_list("name", flat=True)) == ["says 42", "new"]
    assert EvalCase.objects.get(name="says 42").pk == kept.pk  # its earlier result stays
    assert EvalResult.objects.filter(case=kept).count() == 1


def test_a_mistake_in_a_file_names_the_case_and_the_check(tmp_path: Path) -> None:
    bad = [
        CASES[0],
        {
            "name": "broken",
            "messages": [{"role": "user", "content": "Hi"}],
            "checks": [{"type": "contains"}],
        },
        {"name": "says 42", "messages": [{"role": "user", "content": "Hi"}]},
    ]
    _, error = _call("import_eval_dataset", str(_file(tmp_path, bad)))
    assert error is not None
    assert "Case 2: (“broken”) Check 1: the text to look for is required." in error
    assert "Case 3: (“says 42”) another case has the same name" in error
    assert not EvalDataset.objects.exists()
    not_json = tmp_path / "x.json"
    not_json.write_text('{"format": ')
    _, error = _call("import_eval_dataset", str(not_json))
    assert error is not None and "This is not a JSON dataset file (line 1, column 12)" in error


def test_run_eval_takes_a_dataset_file_and_exits_by_its_result(tmp_path: Path) -> None:
    _oracle()  # the definitions a repository's CI would import first
    assert not EvalDataset.objects.exists()  # an empty database: the file brings the cases
    path = _file(tmp_path, CASES)
    out, error = _call(
        "run_eval", "--dataset-file", str(path), "--agent", "oracle", "--threshold", "1"
    )
    assert error is None, out
    assert "Dataset oracle-set from" in out and "Eval passed: 2/2 passed (100%)" in out
    out, error = _call(
        "run_eval",
        "--dataset-file",
        str(path),
        "--agent",
        "oracle",
        "--pin",
        "oracle-prompt=1",  # no kind: the agent's own prompt
        "--threshold",
        "1",
    )
    assert error is not None and error.startswith("Eval failed: 1/2 passed (50%)")
    assert "none updated" in out  # the same file again changes nothing


def test_the_studio_downloads_and_uploads_the_file(admin_client: Client) -> None:
    dataset = EvalDataset.objects.create(name="oracle-set")
    for case in CASES:
        evals.case_save(dataset=dataset, **case)
    page = admin_client.get(f"/admin/agents_app/evaldataset/{dataset.pk}/change/").content.decode()
    url = f"/admin/agents_app/evaldataset/{dataset.pk}/file/"
    assert f'href="{url}"' in page and "Download as a file" in page
    download = admin_client.get(url)
    assert download["Content-Disposition"] == 'attachment; filename="oracle-set.eval.json"'
    text = download.content.decode()
    assert text == eval_files.dataset_text(dataset)
    listing = admin_client.get("/admin/agents_app/evaldataset/").content.decode()
    assert "Upload a dataset file" in listing
    data = json.loads(text)
    data["name"] = "copy-set"
    upload = SimpleUploadedFile("copy.json", json.dumps(data).encode(), "application/json")
    done = admin_client.post("/admin/agents_app/evaldataset/upload/", {"file": upload}, follow=True)
    assert "Dataset copy-set: 2 cases added, none updated, none removed." in done.content.decode()
    copy = EvalDataset.objects.get(name="copy-set")
    assert eval_files.dataset_data(copy)["cases"] == CASES
    data["cases"][1]["checks"] = [{"type": "tool_called"}]
    upload = SimpleUploadedFile("copy.json", json.dumps(data).encode(), "application/json")
    refused = admin_client.post("/admin/agents_app/evaldataset/upload/", {"file": upload})
    assert refused.status_code == 200
    assert refused.context["form"].errors["file"] == [
        "Case 2: (“a number”) Check 1: the tool's name is required."
    ]
