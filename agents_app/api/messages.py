"""Messages of a thread: the page (queued rows as ``pending``), post (202), edit, delete."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.limits import limited
from agents_app.api.redacting import redacts_thread_data, request_redactors
from agents_app.api.responses import MessagePageOut, MessageQueuedOut, SuccessOut
from agents_app.api.schemas import ERRORS, IdempotencyKey, id_list
from agents_app.services.automation import owner_rights
from agents_app.services.threads import branches, feedback
from agents_app.services.threads import messages as message_service
from agents_app.services.threads.idempotency import idempotency_request
from agents_app.services.threads.messages import CONTENT_MAX, NewAttachment

router = Router(tags=["messages"])


class MessageListQuery(Schema):
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)
    order: Literal["asc", "desc"] = "desc"
    includeSilent: bool = False
    depth: int = Field(0, ge=0, le=1000)
    ids: str | None = Field(None, max_length=8000, description="Comma-separated ids (≤200).")
    includeWorkblocks: bool = Field(
        False, description="With ids: each tool-involved message brings its whole work block."
    )


class AttachmentIn(Schema):
    name: str = Field(..., min_length=1, max_length=255)
    mimeType: str = Field("application/octet-stream", max_length=200)
    data: str = Field(..., description="Base64 bytes.")
    width: int | None = Field(None, ge=0, le=100_000)
    height: int | None = Field(None, ge=0, le=100_000)
    thumbnail: str | None = Field(
        None,
        max_length=2_000_000,
        description="Optional base64 (or data: URL) image: kept, re-encoded by us as JPEG, as "
        "the file's thumbnail instead of the one the server makes.",
    )


class MessageIn(Schema):
    role: Literal["user", "assistant", "system"] = "user"
    content: str | None = Field(None, max_length=CONTENT_MAX)
    attachments: list[AttachmentIn] | None = Field(None, max_length=20)
    silent: bool = False


class MessagePatchIn(Schema):
    content: str = Field(..., max_length=CONTENT_MAX)


@router.get("/{thread_id}/messages", response={200: MessagePageOut, **ERRORS}, summary="Messages")
@redacts_thread_data
def message_list(
    request: AuthedRequest, thread_id: str, params: Query[MessageListQuery]
) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth, id_only=True)
    query = selectors.MessageQuery(
        limit=params.limit,
        offset=params.offset,
        order=params.order,
        include_silent=params.includeSilent,
        depth=params.depth,
        ids=id_list(params.ids),
        include_workblocks=params.includeWorkblocks,
    )
    page, total, has_more = selectors.message_page(thread, query)
    feedback.attach_to_page(page, request.auth)
    # Each row's place in the conversation tree (issue #41): parent_id and branch.
    branches.annotate_page(thread.pk, page)
    return {"messages": page, "total": total, "hasMore": has_more}


@router.post(
    "/{thread_id}/messages", response={202: MessageQueuedOut, **ERRORS}, summary="Send a message"
)
@redacts_thread_data
@limited("message_post")
def message_post(
    request: AuthedRequest,
    thread_id: str,
    payload: MessageIn,
    response: HttpResponse,
    idempotency_key: IdempotencyKey = None,
) -> Status:
    """A repeated ``Idempotency-Key`` (per user and thread) gets the first answer again, with
    ``Idempotent-Replayed: true``, and stores nothing; with another body it is a 422."""
    user = request.auth
    # The service locks and reads the thread row itself: here only the access checks (the
    # thread, and its agent still offered to the poster).
    thread = owner_rights.thread_to_post(thread_id, user)
    idempotency = idempotency_request(user, idempotency_key, payload.model_dump())
    attachments = [
        NewAttachment(a.name, a.mimeType, a.data, a.width, a.height, a.thumbnail)
        for a in payload.attachments or []
    ]
    posted = message_service.message_post(
        thread=thread,
        role=payload.role,
        content=payload.content or "",
        attachments=attachments,
        silent=payload.silent,
        idempotency=idempotency,
        redactor=request_redactors(request).get(thread_id),
    )
    if posted.replayed:
        response["Idempotent-Replayed"] = "true"
    return Status(posted.status_code, posted.response)


@router.patch(
    "/{thread_id}/messages/{message_id}",
    response={200: SuccessOut, **ERRORS},
    summary="Edit content",
)
def message_patch(
    request: AuthedRequest, thread_id: str, message_id: str, payload: MessagePatchIn
) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    message_service.message_update(thread=thread, message_id=message_id, content=payload.content)
    return {"success": True}


@router.delete(
    "/{thread_id}/messages/{message_id}", response={200: SuccessOut, **ERRORS}, summary="Delete"
)
def message_delete(request: AuthedRequest, thread_id: str, message_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    message_service.message_delete(thread=thread, message_id=message_id)
    return {"success": True}
