"""Evals over HTTP: datasets, runs (start, watch, cancel) and the comparison of two runs."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from agents_app.api.authed import AuthedRequest
from agents_app.api.automation_responses import (
    DatasetsOut,
    EvalCompareOut,
    EvalRunOneOut,
    EvalRunsOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import NotFound
from agents_app.models import EvalDataset, EvalRun
from agents_app.orchestration.eval_runs import run_cancel, run_start
from agents_app.selectors import parse_uuid
from agents_app.services.evals import checks as evals

router = Router(tags=["evals"])


class RunIn(Schema):
    dataset: str = Field(..., min_length=1, max_length=128)
    agent: str = Field(..., min_length=1, max_length=128)
    versions: dict[str, int] | None = Field(
        None, description='Versions to pin, e.g. {"prompts/support-prompt": 4}; the rest newest.'
    )
    concurrency: int = Field(4, ge=1, le=50)
    label: str = Field("", max_length=200)


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
