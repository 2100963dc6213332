"""Request logs of a thread (the logs WebSocket lives at the same path, see consumers)."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from agents_app import selectors
from agents_app.api.redacting import redacts_thread_data
from agents_app.api.schemas import ERRORS, id_list

router = Router(tags=["logs"])


class LogListQuery(Schema):
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)
    order: Literal["asc", "desc"] = "asc"
    ids: str | None = Field(None, max_length=8000)
    messageIds: str | None = Field(None, max_length=8000)


@router.get("/{thread_id}/logs", response={200: dict, **ERRORS}, summary="Logs")
@redacts_thread_data
def log_list(request: HttpRequest, thread_id: str, params: Query[LogListQuery]) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)  # type: ignore[attr-defined]
    query = selectors.LogQuery(
        limit=params.limit,
        offset=params.offset,
        order=params.order,
        ids=id_list(params.ids),
        message_ids=id_list(params.messageIds),
    )
    logs, total, has_more = selectors.log_page(thread, query)
    return {"logs": logs, "total": total, "hasMore": has_more}


@router.get("/{thread_id}/logs/{log_id}", response={200: dict, **ERRORS}, summary="One log")
@redacts_thread_data
def log_get(request: HttpRequest, thread_id: str, log_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)  # type: ignore[attr-defined]
    return selectors.log_detail(thread, log_id)
