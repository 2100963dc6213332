"""Tool calls that wait for approval or for the client: list, decide, expire, stop.

The engine parks a session on such a call (``runtime.core.waits``): the call's result row
is stored ``pending`` with a ``tool_wait`` object and the session row is ``parked``
(no worker, the sweep leaves it). Deciding writes the decision on the row with a
conditional update that only a still-waiting call takes (two racing approvals: one
wins, the other gets 409), then queues the parked session again; the worker that
claims it resumes the step and turns the decision into the call's result. A held wait
(``live``: a 2025-era MCP server's mid-call question) queues nothing: its running session
reads the decision.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents_app import wire
from agents_app.base.dispatch import session_should_run
from agents_app.base.errors import Conflict, Invalid, Locked, NotFound
from agents_app.broadcast.events import send_thread_frames
from agents_app.models import Message, Thread, ThreadSession
from runtime.core import waits

MAX_REASON = 2000


def waiting_rows(thread_id: Any) -> QuerySet[Message]:
    """The thread's tool result rows whose call still waits for its decision."""
    return _waiting(thread_id)


def _waiting(thread_id: Any) -> QuerySet[Message]:
    return (
        Message.objects.filter(
            thread_id=thread_id, role=Message.Role.TOOL, status=Message.Status.PENDING
        )
        .filter(metadata__has_key=waits.WAIT_KEY)
        .exclude(**{f"metadata__{waits.WAIT_KEY}__has_key": "decision"})
    )


def has_waiting(thread_id: Any) -> bool:
    """Whether a call of the thread still waits for its decision."""
    return _waiting(thread_id).exists()


def pending_calls(thread: Thread) -> list[dict[str, Any]]:
    """The thread's calls waiting for a decision, oldest first (``GET …/pending-tool-calls``)."""
    return [_pending_wire(row) for row in _waiting(thread.pk).order_by("created_at")]


def _pending_wire(row: Message) -> dict[str, Any]:
    wait = row.metadata[waits.WAIT_KEY]
    return {
        "tool_call_id": row.tool_call_id,
        "tool": wait.get("tool") or row.name,
        "args": wait.get("arguments"),
        "kind": wait.get("kind"),
        "request_permission": wait.get("kind") == "approval",
        "side": row.side,
        "status": "pending",
        "message_id": str(row.pk),
        "created_at": wait.get("requested_at"),
        "expires_at": wait.get("expires_at"),
        # The reference's names (its bridge clients read these; never the delivery token).
        "toolCallId": row.tool_call_id,
        "requestPermission": None,
        "risk": None,
        # A variables request is answered at its own route, by this id.
        "variables_request_id": str(row.pk) if wait.get("kind") == "variables" else None,
    }


def decision_from_body(body: Any) -> tuple[str, dict[str, Any]]:
    """``(tool_call_id, decision)`` from an approval body ``{tool_call_id, approve,
    reason?}`` (client results go through ``client_bridge.deliver``)."""
    if not isinstance(body, dict):
        raise Invalid("Body must be a JSON object")
    call_id = body.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise Invalid("tool_call_id is required")
    if "approve" in body:
        if not isinstance(body["approve"], bool):
            raise Invalid("approve must be true or false")
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise Invalid("reason must be a string")
        if not body["approve"] and not (reason or "").strip():
            raise Invalid("reason is required when rejecting a tool call")
        return call_id, waits.approval(body["approve"], (reason or "")[:MAX_REASON])
    raise Invalid(
        "Send approve (true/false) for an approval, or the client's result "
        "(ok, result or error, delivery_token) for a client call"
    )


@transaction.atomic
def tool_call_decide(thread: Thread, tool_call_id: str, decision: dict[str, Any]) -> dict[str, Any]:
    """Record the decision on a waiting call and resume its session (see the module doc)."""
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    if locked.terminated_at is not None:
        raise Locked("Thread is terminated")
    row = (
        Message.objects.filter(thread=locked, role=Message.Role.TOOL, tool_call_id=tool_call_id)
        .filter(metadata__has_key=waits.WAIT_KEY)
        .order_by("-created_at")
        .first()
    )
    if row is None:
        raise NotFound(f"No tool call {tool_call_id} waits on this thread")
    wait = row.metadata[waits.WAIT_KEY]
    decided = wait.get("decision")
    if decided is not None or row.status != Message.Status.PENDING:
        what = (decided or {}).get("type", "answered")
        raise Conflict(f"Tool call {tool_call_id} was already decided ({what})")
    expects = "approval" if decision["type"] in ("approved", "rejected") else None
    if decision["type"] == "client_result":
        expects = "client"
    if decision["type"] in ("variables_supplied", "declined"):
        expects = "variables"
    if wait.get("kind") == "variables" and expects not in ("variables", None):
        raise Invalid(
            f"Tool call {tool_call_id} waits for variables: answer it with "
            f"POST /api/threads/{locked.pk}/variables/{row.pk}"
        )
    if wait.get("kind") == "input" and decision["type"] != "input_answered":
        raise Invalid(
            f"Tool call {tool_call_id} waits for the person's answer to an MCP server's "
            f"question: answer it with POST /api/threads/{locked.pk}/inputs/{row.pk}"
        )
    if expects is not None and wait.get("kind") != expects:
        raise Invalid(
            f"Tool call {tool_call_id} waits for "
            + (
                "approval: send approve"
                if wait.get("kind") == "approval"
                else "the client: its result comes with the delivery_token"
            )
        )
    metadata = {**row.metadata, waits.WAIT_KEY: {**wait, "decision": decision}}
    # The fence: only a call that still waits takes the decision (a racing one changes nothing).
    changed = _waiting(locked.pk).filter(pk=row.pk).update(metadata=metadata)
    if changed != 1:
        raise Conflict(f"Tool call {tool_call_id} was already decided")
    row.metadata = metadata
    if wait.get("kind") == "variables" and decision["type"] != "variables_supplied":
        # The child a variables request made never starts: it leaves the parent's registry.
        Thread.objects.filter(pk=wait.get("child_thread_id"), parent=locked).update(
            child_status="terminated", terminated_at=timezone.now()
        )
    if not wait.get(waits.LIVE_KEY):
        # A held call's session is running and reads the decision itself: nothing to queue.
        resume_parked(locked)
    frames = [wire.message_frame(wire.message_wire(row))]
    transaction.on_commit(lambda: send_thread_frames(str(locked.pk), frames))
    return {"status": "resumed", "side": row.side, "tool_call_id": tool_call_id}


def resume_parked(thread: Thread) -> None:
    """Queue the thread's parked session again once no call waits (hold the thread lock)."""
    if has_waiting(thread.pk):
        return
    parked = ThreadSession.objects.filter(thread=thread, status=ThreadSession.Status.PARKED)
    for pk in list(parked.values_list("pk", flat=True)):
        if (
            ThreadSession.objects.filter(pk=pk, status=ThreadSession.Status.PARKED).update(
                status=ThreadSession.Status.QUEUED, heartbeat_at=None, ended_at=None
            )
            == 1
        ):
            session_should_run(pk)


def answer_stopped(row: Message, now: int) -> Message:
    """A waiting call answered by a stop: "Execution stopped by user" (saved)."""
    wait = dict(row.metadata.get(waits.WAIT_KEY) or {})
    wait["decision"] = waits.stopped()
    row.metadata = {**row.metadata, waits.WAIT_KEY: wait}
    row.content = waits.STOPPED_TEXT
    row.tool_status = Message.ToolStatus.ERROR
    row.status = Message.Status.COMPLETED
    row.response_completed_at = now
    row.save(
        update_fields=["metadata", "content", "tool_status", "status", "response_completed_at"]
    )
    return row


def expire_due() -> int:
    """Give every call whose wait ran out the "timed out" decision (the sweep calls it)."""
    now = waits.now_ms()
    due = (
        Message.objects.filter(role=Message.Role.TOOL, status=Message.Status.PENDING)
        .filter(**{f"metadata__{waits.WAIT_KEY}__expires_at__lt": now})
        .exclude(**{f"metadata__{waits.WAIT_KEY}__has_key": "decision"})
        .values_list("thread_id", "tool_call_id")
    )
    expired = 0
    for thread_id, call_id in list(due[:500]):
        thread = Thread.objects.filter(pk=thread_id).first()
        if thread is None or thread.terminated_at is not None:
            continue
        try:
            tool_call_decide(thread, str(call_id), waits.expired())
            expired += 1
        except Conflict:
            continue  # decided meanwhile
    return expired


def parse_body(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        raise Invalid("Invalid JSON body") from None
