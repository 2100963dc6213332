"""Evals over HTTP: datasets and their files, runs (start, watch, cancel) and the comparison
of two runs. A dataset file goes through ``services.evals.files``, as the studio's upload and
``manage.py import_eval_dataset`` do: one reader, one set of refusals for the three doors."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from agents_app.api.authed import AuthedRequest
from agents_app.api.automation_responses import (
    DatasetImportOut,
    DatasetsOut,
    EvalCompareOut,
    EvalRunOneOut,
    EvalRunsOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Invalid, NotFound
from agents_app.models import EvalDataset, EvalRun
from agents_app.orchestration.eval_runs import run_cancel, run_start
from agents_app.selectors import parse_uuid
from agents_app.services.evals import checks as evals
from agents_app.services.evals import files as eval_files

router = Router(tags=["evals"])


class RunIn(Schema):
    dataset: str = Field(..., min_length=1, max_length=128)
    agent: str = Field(..., min_length=1, max_length=128)
    versions: dict[str, int] | None = Field(
        None, description='Versions to pin, e.g. {"prompts/support-prompt": 4}; the rest newest.'
    )
    concurrency: int = Field(4, ge=1, le=50)
    label: str = Field("", max_length=200)


class FileQuery(Schema):
    format: Literal["json", "jsonl"] = Field(
        "json", description="json: one object; jsonl: the head, then one case a line"
    )


class CompareQuery(Schema):
    a: str = Field(..., max_length=64)
    b: str = Field(..., max_length=64)


def _run(run_id: str) -> EvalRun:
    pk = parse_uuid(run_id)
    run = EvalRun.objects.select_related("dataset").filter(pk=pk).first() if pk else None
    if run is None:
        raise NotFound(f"Eval run not found: {run_id}")
    return run


@router.get("/datasets", response={200: DatasetsOut, **ERRORS}, summary="Eval datasets")
def dataset_list(request: HttpRequest) -> dict[str, Any]:
    rows = EvalDataset.objects.order_by("name").prefetch_related("cases")
    return {
        "datasets": [
            {"name": d.name, "description": d.description, "cases": len(d.cases.all())}
            for d in rows
        ]
    }


@router.get(
    "/datasets/{name}/file",
    response={200: None, **ERRORS},
    summary="Download a dataset as a file",
    openapi_extra={
        "responses": {
            200: {
                "description": "The dataset file (docs/observability.md, Dataset files)",
                "content": {"application/json": {}, "application/jsonl": {}},
            }
        }
    },
)
def dataset_file(request: HttpRequest, name: str, params: Query[FileQuery]) -> HttpResponse:
    dataset = EvalDataset.objects.filter(name=name).first()
    if dataset is None:
        raise NotFound(f"Eval dataset not found: {name}")
    lines = params.format == "jsonl"
    response = HttpResponse(
        eval_files.dataset_lines(dataset) if lines else eval_files.dataset_text(dataset),
        content_type=f"application/{'jsonl' if lines else 'json'}; charset=utf-8",
    )
    filename = eval_files.file_name(dataset, "jsonl" if lines else "json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@router.post(
    "/datasets/file",
    response={200: DatasetImportOut, **ERRORS},
    summary="Create or replace a dataset from a file",
    openapi_extra={
        "requestBody": {
            "content": {
                "application/json": {"schema": {"type": "object"}},
                "application/jsonl": {"schema": {"type": "string"}},
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                },
            }
        }
    },
)
def dataset_file_import(request: HttpRequest) -> dict[str, Any]:
    dataset, counts = eval_files.import_text(_file_body(request))
    return {
        "dataset": {
            "name": dataset.name,
            "description": dataset.description,
            "cases": dataset.cases.count(),
        },
        **counts,
    }


def _file_body(request: HttpRequest) -> bytes:
    """The file as a form upload named ``file``, or the raw body (JSON or JSON Lines)."""
    if request.content_type == "multipart/form-data":
        upload = request.FILES.get("file")
        if upload is None:
            raise Invalid("Send the dataset file as the form field named file.")
        return upload.read(eval_files.MAX_BYTES + 1)
    if not request.body:
        raise Invalid(
            "Send the dataset file: as the body (JSON or JSON Lines) or as a form upload "
            "named file."
        )
    return request.body


@router.post("/runs", response={202: EvalRunOneOut, **ERRORS}, summary="Start an eval run")
def run_create(request: AuthedRequest, payload: RunIn) -> Status:
    run = run_start(
        dataset=payload.dataset,
        agent=payload.agent,
        user=request.auth,
        versions=payload.versions,
        concurrency=payload.concurrency,
        label=payload.label,
    )
    return Status(202, {"run": evals.run_wire(run)})


@router.get("/runs", response={200: EvalRunsOut, **ERRORS}, summary="Eval runs, newest first")
def run_list(request: HttpRequest) -> dict[str, Any]:
    rows = EvalRun.objects.select_related("dataset")[:100]
    return {"runs": [evals.run_wire(r) for r in rows]}


@router.get("/runs/{run_id}", response={200: EvalRunOneOut, **ERRORS}, summary="One eval run")
def run_get(request: HttpRequest, run_id: str) -> dict[str, Any]:
    return {"run": evals.run_wire(_run(run_id), results=True)}


@router.post(
    "/runs/{run_id}/cancel", response={200: EvalRunOneOut, **ERRORS}, summary="Cancel a run"
)
def run_cancel_view(request: HttpRequest, run_id: str) -> dict[str, Any]:
    return {"run": evals.run_wire(run_cancel(_run(run_id)))}


@router.get("/compare", response={200: EvalCompareOut, **ERRORS}, summary="Two runs side by side")
def run_compare(request: HttpRequest, params: Query[CompareQuery]) -> dict[str, Any]:
    table = evals.compare(_run(params.a), _run(params.b))
    return {
        "a": evals.run_wire(table["a"]),
        "b": evals.run_wire(table["b"]),
        "cases": [
            {
                "case": row["case"].name,
                "a": evals.result_wire(row["a"]) if row["a"] else None,
                "b": evals.result_wire(row["b"]) if row["b"] else None,
                "changed": row["changed"],
            }
            for row in table["rows"]
        ],
    }
