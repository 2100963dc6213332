"""The API's pydantic models are built on first use (agents_app/base/model_builds.py): a
process that imports the URLconf no longer compiles the 1,700 models of 162 routes, and the
OpenAPI document is the one eager models give. Fails when a ninja or pydantic release stops
deferring the builds (the start-up cost would be back) or deferral changes the document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[3]

# Counts the response models of every route and how many are compiled, uses one, then prints
# the OpenAPI document (which compiles every model to write its JSON schemas).
SCRIPT = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
import django
django.setup()
import agents_app.base.model_builds as builds
if sys.argv[1] == "eager":
    builds.defer_model_builds = lambda: None  # the routes' models compiled as declared
from agents_app.api import api
from agents_app.api.schemas import ErrorOut

models = [
    model
    for _, router in api._routers
    for view in router.path_operations.values()
    for operation in view.operations
    for model in operation.response_models.values()
    if isinstance(model, type)
]
error = next(m for m in models if m.model_fields["response"].annotation is ErrorOut)
before = sum(bool(model.__pydantic_complete__) for model in models)
used = error.model_validate({"response": {"error": "no"}}).model_dump()
print(json.dumps({
    "models": len(models),
    "built": before,
    "used": used,
    "used_built": bool(error.__pydantic_complete__),
    "document": api.get_openapi_schema(),
}, default=str))
"""


def _run(mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        cwd=ROOT,
        env={**os.environ, "STUDIO_EXECUTOR": "inprocess"},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_api_s_models_are_built_on_first_use_and_document_the_same_api() -> None:
    deferred, eager = _run("deferred"), _run("eager")
    assert deferred["models"] == eager["models"] > 1000
    assert deferred["built"] == 0, deferred["built"]
    assert eager["built"] == eager["models"]
    assert deferred["used"] == eager["used"] == {"response": {"error": "no"}}
    assert deferred["used_built"]
    assert deferred["document"] == eager["document"]
