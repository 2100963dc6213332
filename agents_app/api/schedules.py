"""Recurring schedules over HTTP: create, list, preview, pause, resume, run now, delete
(docs/automation.md, "Schedules"). Thin: ``services.automation.schedules`` decides."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status

from agents_app.api.authed import AuthedRequest
from agents_app.api.automation_responses import (
    DeletedOut,
    NextRunsOut,
    ScheduleOut,
    ScheduleRunOut,
    SchedulesOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import NotFound
from agents_app.models import Schedule
from agents_app.orchestration.schedule_runner import run_start
from agents_app.selectors import parse_uuid
from agents_app.services.automation import owner_rights, schedules
from agents_app.services.sessions.lifecycle import owner_id

router = Router(tags=["schedules"])


class SpecIn(Schema):
    cron: str = Field("", max_length=200)
    timezone: str = Field("UTC", max_length=64)
    intervalSeconds: int | None = Field(None, ge=1)


class ScheduleAttachmentIn(Schema):
    name: str = Field(..., min_length=1, max_length=255)
    mimeType: str = Field("application/octet-stream", max_length=200)
    data: str = Field(..., description="Base64 bytes.")


class ScheduleIn(SpecIn):
    agent: str = Field(..., min_length=1, max_length=128)
    message: str = Field(..., min_length=1, max_length=100_000)
    name: str = Field("", max_length=200)
    env: dict[str, str] | None = None
    target: str = Field("new_thread", max_length=16)
    catchUp: int = Field(0, ge=0, le=1000)
    paused: bool = False
    attachments: list[ScheduleAttachmentIn] | None = Field(None, max_length=10)


def _schedule(request: AuthedRequest, schedule_id: str) -> Schedule:
    """The schedule if the user may manage it (theirs, or anyone's with
    ``manage_others_schedule``); others' are answered as absent."""
    pk = parse_uuid(schedule_id)
    rows = owner_rights.managed_by(
        request.auth, "schedule", Schedule.objects.select_related("agent", "owner")
    )
    row = rows.filter(pk=pk).first() if pk else None
    if row is None:
        raise NotFound(f"Schedule not found: {schedule_id}")
    return row


@router.post("/preview", response={200: NextRunsOut, **ERRORS}, summary="Next five run times")
def schedule_preview(request: HttpRequest, payload: SpecIn) -> dict[str, Any]:
    spec = schedules.ScheduleSpec(payload.cron.strip(), payload.timezone, payload.intervalSeconds)
    return {"nextRuns": [t.isoformat() for t in schedules.next_times(spec, 5)]}


@router.post("", response={201: ScheduleOut, **ERRORS}, summary="Create a schedule")
def schedule_create(request: AuthedRequest, payload: ScheduleIn) -> Status[dict[str, Any]]:
    row = schedules.schedule_create(
        owner=request.auth,
        agent_name=payload.agent,
        message=payload.message,
        cron=payload.cron,
        tz=payload.timezone,
        interval_seconds=payload.intervalSeconds,
        env=payload.env,
        target=payload.target,
        catch_up=payload.catchUp,
        name=payload.name,
        paused=payload.paused,
        attachments=[a.model_dump() for a in payload.attachments or []],
    )
    return Status(201, schedules.schedule_wire(row, upcoming=5))


@router.get("", response={200: SchedulesOut, **ERRORS}, summary="Schedules")
def schedule_list(request: AuthedRequest) -> dict[str, Any]:
    rows = owner_rights.managed_by(
        request.auth, "schedule", Schedule.objects.select_related("agent", "owner")
    ).order_by("created_at")
    return {"schedules": [schedules.schedule_wire(r) for r in rows]}


@router.get(
    "/{schedule_id}", response={200: ScheduleOut, **ERRORS}, summary="A schedule and its runs"
)
def schedule_get(request: AuthedRequest, schedule_id: str) -> dict[str, Any]:
    row = _schedule(request, schedule_id)
    runs = [schedules.run_wire(r) for r in row.runs.order_by("-due_at")[:100]]
    return {**schedules.schedule_wire(row, upcoming=5), "runs": runs}


@router.post("/{schedule_id}/pause", response={200: ScheduleOut, **ERRORS}, summary="Pause")
def schedule_pause(request: AuthedRequest, schedule_id: str) -> dict[str, Any]:
    row = schedules.schedule_pause(_schedule(request, schedule_id), True, actor=request.auth)
    return schedules.schedule_wire(row)


@router.post("/{schedule_id}/resume", response={200: ScheduleOut, **ERRORS}, summary="Resume")
def schedule_resume(request: AuthedRequest, schedule_id: str) -> dict[str, Any]:
    row = schedules.schedule_pause(_schedule(request, schedule_id), False, actor=request.auth)
    return schedules.schedule_wire(row)


@router.post("/{schedule_id}/run", response={200: ScheduleRunOut, **ERRORS}, summary="Run now")
def schedule_run_now(request: AuthedRequest, schedule_id: str) -> dict[str, Any]:
    me = owner_id()
    run = run_start(schedules.manual_run(_schedule(request, schedule_id), me), me)
    return schedules.run_wire(run)


@router.delete("/{schedule_id}", response={200: DeletedOut, **ERRORS}, summary="Delete")
def schedule_delete(request: AuthedRequest, schedule_id: str) -> dict[str, Any]:
    _schedule(request, schedule_id).delete()
    return {"deleted": True, "id": schedule_id}
