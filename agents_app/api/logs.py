"""Request logs of a thread (the logs WebSocket lives at the same path, see consumers)."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Query, Router, Schema

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.redacting import redacts_thread_data, request_redactors
from agents_app.api.run_responses import (
    LogDetailOut,
    LogPageOut,
    ThreadDiagnosticsOut,
    ThreadRevivedOut,
)
from agents_app.api.schemas import ERRORS, id_list
from agents_app.base.errors import Invalid
from agents_app.services.operations import instance_info
from agents_app.services.threads import revive as thread_revive
from runtime.providers.inspect import CannotRender, render_as

router = Router(tags=["logs"])


class LogListQuery(Schema):
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)
    order: Literal["asc", "desc"] = "asc"
    ids: str | None = Field(None, max_length=8000)
    messageIds: str | None = Field(None, max_length=8000)
    includeWorkblocks: bool = Field(False, description="messageIds grow to their work blocks.")
    includeDescendants: bool = Field(
        False,
        description="Add descendant logs (parent_log_id) and the logs of the descendant "
        "threads the caller may view; each row then carries its thread_id.",
    )


@router.get("/{thread_id}/logs", response={200: LogPageOut, **ERRORS}, summary="Logs")
@redacts_thread_data
def log_list(request: AuthedRequest, thread_id: str, params: Query[LogListQuery]) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    query = selectors.LogQuery(
        limit=params.limit,
        offset=params.offset,
        order=params.order,
        ids=id_list(params.ids),
        message_ids=id_list(params.messageIds),
        include_workblocks=params.includeWorkblocks,
        threads=selectors.visible_subtree(thread, request.auth)
        if params.includeDescendants
        else None,
    )
    logs, total, has_more = selectors.log_page(thread, query)
    # The path's thread is redacted on the way out; a descendant's rows by its own secrets.
    redactors = request_redactors(request)
    for item in logs:
        other = item.get("thread_id")
        redactor = redactors.get(other) if other and other != str(thread.pk) else None
        if redactor:
            item.update(redactor.data(item))
    return {"logs": logs, "total": total, "hasMore": has_more}


@router.get("/{thread_id}/logs/{log_id}", response={200: LogDetailOut, **ERRORS}, summary="One log")
@redacts_thread_data
def log_get(request: AuthedRequest, thread_id: str, log_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    redactor = request_redactors(request).get(str(thread.pk))
    return selectors.log_detail(thread, log_id, redactor.data if redactor else None)


@router.get(
    "/{thread_id}/logs/{log_id}/inspect/{provider}",
    response={200: dict, **ERRORS},
    summary="A logged request in a provider's format",
)
@redacts_thread_data
def log_inspect(
    request: AuthedRequest, thread_id: str, log_id: str, provider: str
) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    row = selectors.log_row(thread, log_id)
    try:
        body = render_as(provider, row.provider, row.request_body)
    except CannotRender as exc:
        raise Invalid(str(exc)) from None
    return body


@router.get(
    "/{thread_id}/diagnostics",
    response={200: ThreadDiagnosticsOut, **ERRORS},
    summary="Execution health",
)
@redacts_thread_data
def thread_diagnostics(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    return instance_info.thread_diagnostics(thread)


@router.post(
    "/{thread_id}/revive", response={200: ThreadRevivedOut, **ERRORS}, summary="Probe and revive"
)
def thread_revive_now(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    return thread_revive.thread_revive(thread)
