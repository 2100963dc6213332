"""Threads: create, list, get, patch, delete; subagents, cost; the stream path over HTTP."""

from __future__ import annotations

from typing import Any, Literal

from django.db.models import Count
from django.http import HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError
from ninja.responses import Status

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.limits import limited
from agents_app.api.redacting import redacts_thread_data
from agents_app.api.responses import (
    SubagentsOut,
    ThreadCostOut,
    ThreadCreatedOut,
    ThreadDeletedOut,
    ThreadDetailOut,
    ThreadOwnersOut,
    ThreadPageOut,
    ThreadUpdatedOut,
)
from agents_app.api.schemas import ERRORS, ErrorOut, IdempotencyKey, refuse_unsupported
from agents_app.base.errors import Invalid
from agents_app.base.icons import request_origin
from agents_app.models import Thread
from agents_app.orchestration.thread_creation import thread_create_once
from agents_app.services.env.writes import EnvPatch
from agents_app.services.sessions.subagents import subagent_registry
from agents_app.services.threads import changes as thread_service
from agents_app.services.threads.idempotency import idempotency_request

router = Router(tags=["threads"])

NameType = Literal["text", "secret"]


class ThreadIn(Schema):
    agent_id: str = Field(..., min_length=1, max_length=128)
    tags: list[str] | None = Field(None, max_length=100)
    env: dict[str, str] | None = None
    env_types: dict[str, str] | None = None
    tenvs: dict[str, str] | None = Field(None, description="Legacy alias of env.")
    properties: dict[str, Any] | None = Field(None, description="Refused unless empty.")
    initial_messages: list[Any] | None = Field(None, description="Refused unless empty.")
    data: Any = Field(None, description="Refused unless null.")


# The reference's route takes these and drops them (docs/api.md); we have nowhere to keep
# them, so a client that relies on them hears so instead of getting a thread without them.
_UNSUPPORTED_CREATE_FIELDS = {
    "properties": "thread properties are not supported; leave it out",
    "initial_messages": "not supported; post the messages after creating the thread",
    "data": "not supported; leave it out",
}


def _one_env(env: dict[str, str] | None, tenvs: dict[str, str] | None) -> None:
    """``tenvs`` is the legacy name of ``env``: given both, one would be dropped (issue #38)."""
    if env is not None and tenvs is not None:
        raise Invalid("Invalid request: tenvs: tenvs is the legacy name of env; give one of them")


class ThreadPatchIn(Schema):
    tags: list[str] | None = Field(None, max_length=100)
    agent_id: str | None = Field(None, min_length=1, max_length=128)
    env: dict[str, str] | None = Field(None, description="Replaces the thread's env.")
    tenvs: dict[str, str] | None = Field(None, description="Legacy alias of env.")
    env_types: dict[str, str] | None = None
    env_patch: dict[str, str] | None = None
    env_type_patch: dict[str, str] | None = None
    env_delete: list[str] | None = None


class ThreadListQuery(Schema):
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=10_000_000)
    agent_id: str | None = Field(None, max_length=128)
    user_id: str | None = Field(None, max_length=32, description="Staff only.")
    search: str | None = Field(None, max_length=200, description="A tag or a thread id.")
    q: str | None = Field(
        None,
        max_length=200,
        description="Words in the title, the agent, the last message preview or any message.",
    )
    startDate: int | None = Field(None, ge=0, le=253_402_300_799)
    endDate: int | None = Field(None, ge=0, le=253_402_300_799)
    sort: Literal["activity", "created", "oldest"] = "activity"
    executing: bool | None = None
    terminated: bool | None = None
    include_children: bool = False


@router.post("", response={200: ThreadCreatedOut, **ERRORS}, summary="Create a thread")
@limited("thread_create")
def thread_create(
    request: AuthedRequest,
    payload: ThreadIn,
    response: HttpResponse,
    idempotency_key: IdempotencyKey = None,
) -> Status:
    """A repeated ``Idempotency-Key`` (per user) gets the first answer again, with
    ``Idempotent-Replayed: true``; 409 while the first is still running; 422 with another body."""
    refuse_unsupported(payload.model_dump(), _UNSUPPORTED_CREATE_FIELDS)
    _one_env(payload.env, payload.tenvs)
    user = request.auth
    # A draft, or an agent offered to other groups, is absent for this user (404).
    agent = selectors.offered_agent(user, payload.agent_id)
    answer = thread_create_once(
        idempotency=idempotency_request(user, idempotency_key, payload.model_dump()),
        user=user,
        agent_name=payload.agent_id,
        agent=agent,
        tags=payload.tags,
        env=payload.env if payload.env is not None else payload.tenvs,
        env_types=payload.env_types,
    )
    if answer.replayed:
        response["Idempotent-Replayed"] = "true"
    return Status(answer.status_code, answer.response)


@router.get("", response={200: ThreadPageOut, **ERRORS}, summary="List threads")
def thread_list(request: AuthedRequest, params: Query[ThreadListQuery]) -> dict[str, Any]:
    filters = selectors.ThreadFilters(
        limit=params.limit,
        offset=params.offset,
        agent_id=params.agent_id,
        user_id=params.user_id,
        search=params.search,
        text=params.q,
        start_date=params.startDate,
        end_date=params.endDate,
        sort=params.sort,
        executing=params.executing,
        terminated=params.terminated,
        include_children=params.include_children,
    )
    items, total, has_more = selectors.thread_list(request.auth, filters, request_origin(request))
    return {"threads": items, "total": total, "hasMore": has_more}


@router.get("/owners", response={200: ThreadOwnersOut, **ERRORS}, summary="Thread owners")
def thread_owners(request: AuthedRequest) -> dict[str, Any]:
    rows = (
        selectors.visible_threads(request.auth)
        .exclude(owner=None)
        .values("owner_id", "owner__username", "owner__email", "owner__first_name")
        .annotate(n=Count("id"))
        .order_by("owner__username")
    )
    return {
        "owners": [
            {
                "user_id": str(r["owner_id"]),
                "username": r["owner__username"],
                "display_name": r["owner__first_name"] or None,
                "email": r["owner__email"] or None,
                "thread_count": r["n"],
            }
            for r in rows
        ]
    }


def _thread(request: AuthedRequest, thread_id: str) -> Thread:
    return selectors.access_thread(thread_id, request.auth)


@router.get("/{thread_id}", response={200: ThreadDetailOut, **ERRORS}, summary="Get a thread")
@redacts_thread_data
def thread_get(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    return selectors.thread_detail(_thread(request, thread_id), request_origin(request))


@router.patch("/{thread_id}", response={200: ThreadUpdatedOut, **ERRORS}, summary="Update a thread")
@redacts_thread_data
def thread_patch(request: AuthedRequest, thread_id: str, payload: ThreadPatchIn) -> dict[str, Any]:
    thread = _thread(request, thread_id)
    _one_env(payload.env, payload.tenvs)
    replace = payload.env if payload.env is not None else payload.tenvs
    env = EnvPatch(
        replace=replace,
        replace_types=payload.env_types,
        patch=payload.env_patch or {},
        type_patch=payload.env_type_patch or {},
        delete=payload.env_delete or [],
    )
    changes = thread_service.ThreadChanges(
        tags=payload.tags,
        agent_name=payload.agent_id,
        env=None if env.is_empty() else env,
    )
    return thread_service.thread_update(
        thread=thread,
        changes=changes,
        actor=request.auth,
    )


@router.delete(
    "/{thread_id}", response={200: ThreadDeletedOut, **ERRORS}, summary="Delete a thread tree"
)
def thread_delete(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    thread = _thread(request, thread_id)
    deleted = thread_service.thread_delete(thread=thread)
    return {
        "success": True,
        "threadId": str(thread_id),
        "deletedThreadIds": deleted,
        "deletedCount": len(deleted),
        "message": "Thread deleted successfully",
    }


@router.get(
    "/{thread_id}/subagents", response={200: SubagentsOut, **ERRORS}, summary="Child threads"
)
@redacts_thread_data
def thread_subagents(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    return {"subagents": subagent_registry(_thread(request, thread_id))}


@router.get(
    "/{thread_id}/cost", response={200: ThreadCostOut, **ERRORS}, summary="Cost, recursively"
)
def thread_cost(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    return selectors.thread_cost(_thread(request, thread_id))


@router.get(
    "/{thread_id}/stream",
    response={400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut},
    summary="The live message stream (WebSocket only)",
)
def thread_stream_http(request: AuthedRequest, thread_id: str) -> Any:
    _thread(request, thread_id)
    raise HttpError(400, "This endpoint only supports WebSocket connections")
