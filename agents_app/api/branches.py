"""Conversations as trees (issue #41): edit, regenerate, switch the active path, fork, and
the tree itself. Thin: the rules live in ``agents_app.services.threads.branches``."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from ninja import Field, Router, Schema
from ninja.responses import Status

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.limits import limited
from agents_app.api.messages import AttachmentIn
from agents_app.api.redacting import redacts_thread_data, request_redactors
from agents_app.api.responses import (
    ActivePathOut,
    ContinueOut,
    MessageQueuedOut,
    MessageTreeOut,
    ThreadForkedOut,
)
from agents_app.api.schemas import ERRORS, IdempotencyKey, refuse_unsupported
from agents_app.services.automation import owner_rights
from agents_app.services.threads import branches
from agents_app.services.threads.idempotency import idempotency_request
from agents_app.services.threads.messages import CONTENT_MAX, NewAttachment

router = Router(tags=["branches"])


class EditIn(Schema):
    content: str | None = Field(None, max_length=CONTENT_MAX)
    attachments: list[AttachmentIn] | None = Field(None, max_length=20)


class MessageRefIn(Schema):
    message_id: str = Field(..., min_length=1, max_length=64)


def _attachments(payload: EditIn) -> list[NewAttachment]:
    for index, attachment in enumerate(payload.attachments or []):
        refuse_unsupported(
            {f"attachments.{index}.thumbnail": attachment.thumbnail or None},
            {f"attachments.{index}.thumbnail": "not supported; the server makes thumbnails"},
        )
    return [
        NewAttachment(a.name, a.mimeType, a.data, a.width, a.height)
        for a in payload.attachments or []
    ]


@router.post(
    "/{thread_id}/messages/{message_id}/edit",
    response={202: MessageQueuedOut, **ERRORS},
    summary="Edit a user message (a new version)",
)
@redacts_thread_data
@limited("message_post")
def message_edit(
    request: AuthedRequest,
    thread_id: str,
    message_id: str,
    payload: EditIn,
    response: HttpResponse,
    idempotency_key: IdempotencyKey = None,
) -> Status:
    """202 as a post; a repeated ``Idempotency-Key`` gets the first answer and stores nothing."""
    user = request.auth
    thread = owner_rights.thread_to_post(thread_id, user)
    body = {"edit": message_id, **payload.model_dump()}
    idempotency = idempotency_request(user, idempotency_key, body)
    posted = branches.message_edit(
        thread=thread,
        message_id=message_id,
        content=payload.content or "",
        attachments=_attachments(payload),
        idempotency=idempotency,
        redactor=request_redactors(request).get(thread_id),
    )
    if posted.replayed:
        response["Idempotent-Replayed"] = "true"
    return Status(posted.status_code, posted.response)


@router.post(
    "/{thread_id}/messages/{message_id}/regenerate",
    response={202: ContinueOut, **ERRORS},
    summary="Regenerate a reply (a new version)",
)
@limited("message_post")
def reply_regenerate(request: AuthedRequest, thread_id: str, message_id: str) -> Status:
    thread = selectors.access_thread(thread_id, request.auth, action="change")
    owner_rights.require_offered(request.auth, thread.agent_id)
    return Status(202, branches.reply_regenerate(thread=thread, message_id=message_id))


@router.put(
    "/{thread_id}/active", response={200: ActivePathOut, **ERRORS}, summary="Switch version"
)
def active_set(request: AuthedRequest, thread_id: str, payload: MessageRefIn) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth, action="change")
    path = branches.active_set(thread=thread, message_id=payload.message_id)
    return {"active_path": path, "leaf_id": path[-1] if path else None}


@router.post("/{thread_id}/fork", response={200: ThreadForkedOut, **ERRORS}, summary="Fork")
@limited("thread_create")
def thread_fork(request: AuthedRequest, thread_id: str, payload: MessageRefIn) -> dict[str, Any]:
    user = request.auth
    thread = selectors.access_thread(thread_id, user, action="change")
    owner_rights.require_offered(user, thread.agent_id)
    fork = branches.thread_fork(thread=thread, message_id=payload.message_id, user=user)
    return {"threadId": str(fork.pk), "message": "Thread forked"}


@router.get("/{thread_id}/tree", response={200: MessageTreeOut, **ERRORS}, summary="Message tree")
@redacts_thread_data
def message_tree(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth, action="view")
    return branches.tree_wire(thread)
