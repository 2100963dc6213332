"""Feedback on replies: ``POST|DELETE /api/threads/{id}/messages/{message_id}/feedback``."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Router, Schema

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.responses import FeedbackSetOut, FeedbackWithdrawnOut
from agents_app.api.schemas import ERRORS
from agents_app.services.threads import feedback as feedback_service

router = Router(tags=["feedback"])


class FeedbackIn(Schema):
    score: Literal[1, -1]
    reason: str | None = Field(None, max_length=100)
    comment: str | None = Field(None, max_length=feedback_service.COMMENT_MAX)


@router.post(
    "/{thread_id}/messages/{message_id}/feedback",
    response={200: FeedbackSetOut, **ERRORS},
    summary="Rate a reply (a second call replaces the first)",
)
def feedback_post(
    request: AuthedRequest, thread_id: str, message_id: str, payload: FeedbackIn
) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    rating = feedback_service.Rating(payload.score, payload.reason or "", payload.comment or "")
    row = feedback_service.feedback_set(
        thread=thread,
        message_id=message_id,
        user=request.auth,
        rating=rating,
    )
    return {"feedback": feedback_service.feedback_wire(row)}


@router.delete(
    "/{thread_id}/messages/{message_id}/feedback",
    response={200: FeedbackWithdrawnOut, **ERRORS},
    summary="Withdraw your rating of a reply",
)
def feedback_delete(request: AuthedRequest, thread_id: str, message_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    withdrawn = feedback_service.feedback_withdraw(
        thread=thread,
        message_id=message_id,
        user=request.auth,
    )
    return {"withdrawn": withdrawn, "feedback": None}
