"""Execution control: stop, continue; scheduled effects (list, cancel, run now)."""

from __future__ import annotations

import json
from typing import Any, Literal

from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.redacting import redacts_thread_data
from agents_app.api.responses import ContinueOut, PendingToolCallsOut, StoppedOut
from agents_app.api.run_responses import (
    EffectCanceledOut,
    EffectPageOut,
    EffectRanOut,
    InputAnswerOut,
    InputRequestOut,
    ToolResultOut,
    VariablesAnswerOut,
    VariablesRequestOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Invalid, NotFound
from agents_app.base.storable_text import describe_unstorable, find_unstorable
from agents_app.orchestration import effect_runner
from agents_app.services.sessions import (
    client_bridge,
    input_requests,
    tool_waits,
    variables_requests,
)
from agents_app.services.sessions import effects as effect_service
from agents_app.services.sessions import lifecycle as sessions

router = Router(tags=["execution"])


class ContinueIn(Schema):
    side: Literal["a", "b"] = Field("a", description="The side that acts (default a).")


class EffectListQuery(Schema):
    limit: int = Field(100, ge=1, le=500)
    offset: int = Field(0, ge=0, le=10_000_000)


@router.post("/{thread_id}/stop", response={200: StoppedOut, **ERRORS}, summary="Stop execution")
def thread_stop(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    sessions.thread_stop(thread=thread)
    return {"status": "stopped", "message": "Thread execution stopped"}


@router.get(
    "/{thread_id}/pending-tool-calls",
    response={200: PendingToolCallsOut, **ERRORS},
    summary="Tool calls waiting for approval or the client",
)
def pending_tool_calls(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    return {"pending": tool_waits.pending_calls(thread)}


@router.post(
    "/{thread_id}/tool-result",
    response={200: ToolResultOut, **ERRORS},
    summary="Approve, reject, or answer a waiting tool call",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["tool_call_id"],
                        "properties": {
                            "tool_call_id": {"type": "string"},
                            "approve": {"type": "boolean"},
                            "reason": {"type": "string"},
                            "ok": {"type": "boolean"},
                            "result": {},
                            "error": {"type": "string"},
                            "client_id": {"type": "string"},
                            "generation": {"type": "integer"},
                            "delivery_token": {"type": "string"},
                        },
                    }
                }
            },
        }
    },
)
def tool_result(request: AuthedRequest, thread_id: str) -> dict[str, Any]:
    body = tool_waits.parse_body(request.body)
    found = find_unstorable(body)
    if found:
        raise Invalid(describe_unstorable(found))
    if (
        isinstance(body, dict)
        and "approve" not in body
        and ("ok" in body or "delivery_token" in body)
    ):
        checked = client_bridge.result_from_body(body)  # the reference's client result
        thread = selectors.access_thread(thread_id, request.auth)
        return client_bridge.deliver(thread, checked)
    call_id, decision = tool_waits.decision_from_body(body)
    thread = selectors.access_thread(thread_id, request.auth)
    return tool_waits.tool_call_decide(thread, call_id, decision)


@router.get(
    "/{thread_id}/variables/{request_id}",
    response={200: VariablesRequestOut, **ERRORS},
    summary="A variables request: the scoped env a subagent waits for (names, never values)",
)
def variables_request(request: AuthedRequest, thread_id: str, request_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    return variables_requests.request_wire(thread, request_id)


@router.post(
    "/{thread_id}/variables/{request_id}",
    response={200: VariablesAnswerOut, **ERRORS},
    summary="Supply (or decline) a variables request's values; the waiting call resumes",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "values": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                            "env": {
                                "type": "object",
                                "description": "the reference's name for values",
                            },
                            "types": {
                                "type": "object",
                                "additionalProperties": {"enum": ["text", "secret"]},
                            },
                            "decline": {"type": "boolean"},
                            "reason": {"type": "string"},
                        },
                    }
                }
            },
        }
    },
)
def variables_answer(request: AuthedRequest, thread_id: str, request_id: str) -> dict[str, Any]:
    body = tool_waits.parse_body(request.body)
    found = find_unstorable(body)
    if found:
        raise Invalid(describe_unstorable(found))
    thread = selectors.access_thread(thread_id, request.auth)
    return variables_requests.request_answer(thread, request_id, body, request.auth)


@router.get(
    "/{thread_id}/inputs/{request_id}",
    response={200: InputRequestOut, **ERRORS},
    summary="An MCP server's question to the person (elicitation): its message and fields",
)
def input_request(request: AuthedRequest, thread_id: str, request_id: str) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    return input_requests.request_wire(thread, request_id)


@router.post(
    "/{thread_id}/inputs/{request_id}",
    response={200: InputAnswerOut, **ERRORS},
    summary="Answer an MCP server's question (accept with values, decline or cancel)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["action"],
                        "properties": {
                            "action": {"enum": ["accept", "decline", "cancel"]},
                            "content": {"type": "object"},
                        },
                    }
                }
            },
        }
    },
)
def input_answer(request: AuthedRequest, thread_id: str, request_id: str) -> dict[str, Any]:
    body = tool_waits.parse_body(request.body)
    found = find_unstorable(body)
    if found:
        raise Invalid(describe_unstorable(found))
    thread = selectors.access_thread(thread_id, request.auth)
    return input_requests.request_answer(thread, request_id, body)


@router.post(
    "/{thread_id}/continue",
    response={202: ContinueOut, **ERRORS},
    summary="Continue",
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {"application/json": {"schema": ContinueIn.model_json_schema()}},
        }
    },
)
def thread_continue(request: AuthedRequest, thread_id: str) -> Status:
    side = _side(request.body if request.content_type == "application/json" else b"")
    thread = selectors.access_thread(thread_id, request.auth)
    session = sessions.thread_continue(thread=thread, side=side)
    return Status(
        202,
        {
            "status": "queued",
            "queueId": str(session.pk) if session else None,
            "message": "Continuing execution. Connect via WebSocket for real-time updates.",
        },
    )


def _side(body: bytes) -> str:
    """``{"side": "a"|"b"}``; an empty body (or no side) means side A."""
    if not body.strip():
        return "a"
    try:
        data = json.loads(body)
    except ValueError:
        raise Invalid("Invalid JSON body") from None
    found = find_unstorable(data)
    if found:  # refused like any other JSON body, though only "side" is read
        raise Invalid(describe_unstorable(found))
    side = data.get("side", "a") if isinstance(data, dict) else None
    side = "a" if side is None else side
    if side not in ("a", "b"):
        raise Invalid("side must be 'a' or 'b'")
    return str(side)


@router.get(
    "/{thread_id}/effects", response={200: EffectPageOut, **ERRORS}, summary="Scheduled effects"
)
@redacts_thread_data
def effect_list(
    request: AuthedRequest, thread_id: str, params: Query[EffectListQuery]
) -> dict[str, Any]:
    thread = selectors.access_thread(thread_id, request.auth)
    return selectors.effect_page(thread, params.limit, params.offset)


def _effect(request: AuthedRequest, thread_id: str, effect_id: str) -> Any:
    thread = selectors.access_thread(thread_id, request.auth)
    effect = selectors.effect_in_thread(thread, effect_id)
    if effect is None:
        raise NotFound(f"Effect not found: {effect_id}")
    return effect


@router.post(
    "/{thread_id}/effects/{effect_id}/cancel",
    response={200: EffectCanceledOut, **ERRORS},
    summary="Cancel",
)
def effect_cancel(request: AuthedRequest, thread_id: str, effect_id: str) -> dict[str, Any]:
    return effect_service.effect_cancel(effect=_effect(request, thread_id, effect_id))


@router.post(
    "/{thread_id}/effects/{effect_id}/run",
    response={200: EffectRanOut, **ERRORS},
    summary="Run now",
)
def effect_run(request: AuthedRequest, thread_id: str, effect_id: str) -> dict[str, Any]:
    return effect_runner.effect_run(effect=_effect(request, thread_id, effect_id))
