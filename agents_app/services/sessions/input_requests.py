"""Questions from MCP servers to the person (elicitation; issue #57, docs/mcp.md).

A remote server that needs the person's input before a tool call can finish answers the call
with ``input_required`` (MCP 2026-07-28): its questions (a message and the JSON schema of the
fields it wants) and an opaque ``request_state``. The engine stores the call's result row
``pending`` with a ``tool_wait`` of kind ``input`` holding both (``runtime.core.waits``) and
parks the session, as an approval does; the request's id is that row's id. Answering
(accept with values, decline, cancel) records the decision on the row and queues the parked
session, whose resumed call sends the answer and the state back to the server.

A 2025-era server asks in the middle of the call instead (``elicitation/create``): the
call is held open, its row is the same ``pending`` row with ``live: true`` in its wait, and
the same routes read and answer it; the running session reads the answer and sends it on.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from agents_app.base.errors import Conflict, Invalid, NotFound
from agents_app.models import Message, Thread
from agents_app.services.sessions.tool_waits import tool_call_decide
from runtime.core import waits

KIND = "input"
ACTIONS = ("accept", "decline", "cancel")
MAX_TEXT = 10_000
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
}


def _row(thread: Thread, request_id: str) -> Message:
    try:
        pk: str | None = str(uuid.UUID(request_id))
    except ValueError:
        pk = None
    row = (
        Message.objects.filter(thread=thread, role=Message.Role.TOOL, pk=pk)
        .filter(**{f"metadata__{waits.WAIT_KEY}__kind": KIND})
        .first()
        if pk is not None
        else None
    )
    if row is None:
        raise NotFound(f"No input request {request_id[:80]} on this thread")
    return row


def _status(wait: dict[str, Any]) -> str:
    decision = wait.get("decision")
    if not isinstance(decision, dict):
        return "pending"
    if decision.get("type") == "input_answered":
        return {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}.get(
            str(decision.get("action")), "answered"
        )
    return str(decision.get("type"))


def _questions(wait: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"key": q.get("key"), "message": q.get("message"), "schema": q.get("schema") or {}}
        for q in (wait.get("input") or {}).get("questions") or []
    ]


def request_wire(thread: Thread, request_id: str) -> dict[str, Any]:
    """What the server asks (``GET …/inputs/{requestId}``): its message and requested fields."""
    row = _row(thread, request_id)
    wait = row.metadata[waits.WAIT_KEY]
    return {
        "request_id": str(row.pk),
        "thread_id": str(thread.pk),
        "tool_call_id": row.tool_call_id,
        "tool": wait.get("tool"),
        "questions": _questions(wait),
        "status": _status(wait),
        "requested_at": wait.get("requested_at"),
        "expires_at": wait.get("expires_at"),
    }


def pending_wires(thread: Thread) -> list[dict[str, Any]]:
    """The thread's questions still waiting for the person (oldest first)."""
    rows = Message.objects.filter(
        thread=thread, role=Message.Role.TOOL, status=Message.Status.PENDING
    ).filter(**{f"metadata__{waits.WAIT_KEY}__kind": KIND})
    return [
        request_wire(thread, str(r.pk))
        for r in rows.order_by("created_at")[:50]
        if waits.WAIT_KEY in r.metadata and "decision" not in r.metadata[waits.WAIT_KEY]
    ]


def check_content(schema: dict[str, Any], content: Any) -> dict[str, Any]:
    """``content`` checked against the server's requested schema (flat, primitive fields)."""
    if not isinstance(content, dict):
        raise Invalid("content must be an object of field: value")
    fields = schema.get("properties") or {}
    unknown = sorted(set(content) - set(fields))
    if unknown:
        raise Invalid("content: not asked for by the server: " + ", ".join(unknown)[:200])
    missing = [f for f in schema.get("required") or [] if content.get(f) in (None, "")]
    if missing:
        raise Invalid("content: required by the server: " + ", ".join(missing)[:200])
    for name, value in content.items():
        spec = fields.get(name) or {}
        kind = spec.get("type")
        if value is None:
            continue
        wanted = _TYPES.get(str(kind))
        if wanted is not None and (
            not isinstance(value, wanted) or (kind != "boolean" and isinstance(value, bool))
        ):
            raise Invalid(f"content: {name[:40]} must be a {kind}")
        if "enum" in spec and value not in spec["enum"]:
            raise Invalid(f"content: {name[:40]} must be one of the server's choices")
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise Invalid(f"content: {name[:40]} is longer than {MAX_TEXT} characters")
    return dict(content)


def first_question(wait: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """The server's name, its (first) question and the schema an answer's content follows:
    what the doors that show one question at a time (AG-UI, A2A) ask the person."""
    tool = str(wait.get("tool") or "")
    server = tool.split("__", 1)[0] if "__" in tool else tool
    questions = _questions(wait)
    message = str(questions[0]["message"] or "") if questions else ""
    return server, message, _answer_schema(questions)


def _answer_schema(questions: list[dict[str, Any]]) -> dict[str, Any]:
    # Several questions in one wait have no single schema: only an empty content fits.
    schema = questions[0]["schema"] if len(questions) == 1 else {}
    return schema if isinstance(schema, dict) else {}


def check_answer(wait: dict[str, Any], body: Any) -> tuple[str, dict[str, Any]]:
    """The action and content of an answer to ``wait``, checked (``Invalid`` otherwise)."""
    if not isinstance(body, dict):
        raise Invalid("Body must be a JSON object")
    action = body.get("action")
    if action not in ACTIONS:
        raise Invalid('action must be "accept", "decline" or "cancel"')
    if action == "accept":
        return action, check_content(_answer_schema(_questions(wait)), body.get("content", {}))
    if "content" in body and body["content"] not in (None, {}):
        raise Invalid("content is sent only with action accept")
    return action, {}


@transaction.atomic
def request_answer(thread: Thread, request_id: str, body: Any) -> dict[str, Any]:
    """Answer a server's question: ``{action: "accept", content: {...}}``, ``{action:
    "decline"}`` or ``{action: "cancel"}``; the waiting call resumes with it."""
    if not isinstance(body, dict):
        raise Invalid("Body must be a JSON object")
    if body.get("action") not in ACTIONS:
        raise Invalid('action must be "accept", "decline" or "cancel"')
    row = _row(thread, request_id)
    wait = row.metadata[waits.WAIT_KEY]
    if wait.get("decision") is not None or row.status != Message.Status.PENDING:
        raise Conflict(f"Input request {row.pk} was already answered ({_status(wait)})")
    action, content = check_answer(wait, body)
    decided = tool_call_decide(thread, str(row.tool_call_id), waits.input_answered(action, content))
    return {"request_id": str(row.pk), "status": decided["status"]}
