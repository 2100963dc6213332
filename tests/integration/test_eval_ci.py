"""Issue #55: a repository's CI runs its evals against a fresh database. The repository holds
its definitions and a dataset file; the pipeline migrates an empty database, imports the
definitions, and ``run_eval --dataset FILE`` (or ``--dataset-file FILE``) exits 0 when the pass rate reaches the threshold
and 1 when it does not, as separate processes with nothing else set up."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.integration.stack import BIN, ROOT, sqlite_database

pytestmark = pytest.mark.integration

DATASET = {
    "format": "standard-agents/eval-dataset",
    "version": 1,
    "name": "oracle-set",
    "cases": [
        {
            "name": "says 42",
            "messages": [{"role": "user", "content": "What is the answer?"}],
            "checks": [{"type": "contains", "text": "42"}],
        },
        {
            "name": "a number",
            "messages": [{"role": "user", "content": "What is the answer?"}],
            "checks": [{"type": "matches", "pattern": "answer is \\d+"}],
        },
    ],
}


def _repository(root: Path, answer: str) -> None:
    """definitions/ as export_definitions writes them, and evals/oracle.eval.json."""
    definitions = [
        ("models", ModelDefinition(name="oracle-model", provider="test", model="scripted",
                                   script=[{"content": answer}] * 4)),
        ("prompts", PromptDefinition(name="oracle-prompt", model="oracle-model",
                                     prompt="Answer.", include_chat=True)),
        ("agents", AgentDefinition(name="oracle", side_a=SideConfig(prompt="oracle-prompt"))),
    ]  # fmt: skip
    for kind, definition in definitions:
        folder = root / "definitions" / kind
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{definition.name}.json").write_text(json.dumps(definition.dump()))
    (root / "evals").mkdir(exist_ok=True)
    (root / "evals" / "oracle.eval.json").write_text(json.dumps(DATASET))


def _pipeline(tmp: Path, answer: str, flag: str) -> subprocess.CompletedProcess[str]:
    repo = tmp / "repo"
    _repository(repo, answer)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "DATABASE_URL", "STUDIO_EXECUTOR", "TEST_DB_NAME")
    }
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "studio.settings",
            "STUDIO_VAR_DIR": str(tmp / "var"),
            "STUDIO_EXECUTOR": "none",  # the command runs the cases itself: no worker in CI
        }
    )
    sqlite_database(tmp / "var" / "studio.sqlite3", env, seeded=False)  # migrated, empty
    python = str(BIN / "python")
    subprocess.run(
        [python, "manage.py", "import_definitions", str(repo / "definitions")],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    return subprocess.run(
        [python, "manage.py", "run_eval", flag, str(repo / "evals/oracle.eval.json"),
         "--agent", "oracle", "--threshold", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_repository_passes_its_evals_in_a_fresh_database(tmp_path: Path) -> None:
    done = _pipeline(tmp_path, "The answer is 42.", "--dataset-file")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Dataset oracle-set from" in done.stdout and "2 cases added" in done.stdout
    assert "Eval passed: 2/2 passed (100%)" in done.stdout


def test_a_repository_fails_its_evals_with_exit_code_1(tmp_path: Path) -> None:
    done = _pipeline(tmp_path, "The answer is 41.", "--dataset")  # a path: read as a file
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "FAIL      says 42" in done.stdout
    assert "Eval failed: 1/2 passed (50%)" in done.stderr
