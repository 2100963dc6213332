"""Variables requests: a ``subagent_create`` whose ``scopedEnv`` values the parent cannot
resolve waits for a person to supply them (spec 0.2.0, row I2).

The engine creates the child thread (not started), stores the call's result row ``pending``
with a ``tool_wait`` of kind ``variables`` (``runtime.core.waits``) and parks the session, as
an approval does; the request's id is that row's id. Answering writes the values into the
child's own thread env (secrets as secrets, so they are redacted like any env value), records
the decision on the row (names only, never values) and queues the parked session, whose
resumed call creates and starts the child and returns its normal result. Declining fails the
call with a sentence and terminates the unstarted child.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from agents_app.base.errors import Conflict, Invalid, NotFound
from agents_app.models import Message, Thread
from agents_app.services.env.writes import EnvPatch, env_apply
from agents_app.services.sessions.tool_waits import tool_call_decide
from runtime.core import waits

KIND = "variables"
MAX_REASON = 2000


def _row(thread: Thread, request_id: str) -> Message:
    pk = _uuid(request_id)
    row = (
        Message.objects.filter(thread=thread, role=Message.Role.TOOL, pk=pk)
        .filter(**{f"metadata__{waits.WAIT_KEY}__kind": KIND})
        .first()
        if pk is not None
        else None
    )
    if row is None:
        raise NotFound(f"No variables request {request_id[:80]} on this thread")
    return row


def _uuid(raw: str) -> str | None:
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        return None


def _status(wait: dict[str, Any]) -> str:
    decision = wait.get("decision")
    if not isinstance(decision, dict):
        return "pending"
    return {"variables_supplied": "supplied", "declined": "declined"}.get(
        str(decision.get("type")), str(decision.get("type"))
    )


def request_wire(thread: Thread, request_id: str) -> dict[str, Any]:
    """What a variables request asks for (``GET …/variables/{requestId}``): names, never values."""
    row = _row(thread, request_id)
    wait = row.metadata[waits.WAIT_KEY]
    return {
        "request_id": str(row.pk),
        "parent_thread_id": str(thread.pk),
        "child_thread_id": wait.get("child_thread_id"),
        "agent_name": wait.get("agent_name"),
        "registry_agent_name": wait.get("registry_agent_name"),
        "tool_call_id": row.tool_call_id,
        "required": list(wait.get("required") or []),
        "missing": list(wait.get("missing") or []),
        "status": _status(wait),
        "requested_at": wait.get("requested_at"),
        "expires_at": wait.get("expires_at"),
    }


def _values(body: dict[str, Any]) -> dict[str, str]:
    # ``env`` is the reference's name for the same object; its null values are dropped.
    raw = body.get("values", body.get("env"))
    if not isinstance(raw, dict):
        raise Invalid("Body must include values as an object of NAME: value")
    out = {}
    for name, value in raw.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise Invalid(f"values: the value of {str(name)[:40]!r} must be a string")
        out[str(name)] = value
    return out


def _types(body: dict[str, Any], names: set[str]) -> dict[str, str]:
    raw = body.get("types") or {}
    if not isinstance(raw, dict):
        raise Invalid('types must be an object of NAME: "text" | "secret"')
    for name, kind in raw.items():
        if kind not in ("text", "secret"):
            raise Invalid(f'types: {str(name)[:40]!r} must be "text" or "secret"')
        if name not in names:
            raise Invalid(f"types: {str(name)[:40]!r} is not among the supplied values")
    return {str(k): str(v) for k, v in raw.items()}


@transaction.atomic
def request_answer(thread: Thread, request_id: str, body: Any, actor: Any) -> dict[str, Any]:
    """Supply (``{values: {NAME: value}, types?}``) or decline (``{decline: true, reason?}``)
    a variables request; resumes the parked call either way (see the module doc)."""
    if not isinstance(body, dict):
        raise Invalid("Body must be a JSON object")
    row = _row(thread, request_id)
    wait = row.metadata[waits.WAIT_KEY]
    if wait.get("decision") is not None or row.status != Message.Status.PENDING:
        raise Conflict(f"Variables request {row.pk} was already answered ({_status(wait)})")
    child = Thread.objects.filter(pk=wait.get("child_thread_id"), parent=thread).first()
    if child is None:
        raise NotFound("The subagent thread of this variables request no longer exists")
    if body.get("decline") is True:
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise Invalid("reason must be a string")
        decided = tool_call_decide(
            thread, str(row.tool_call_id), waits.variables_declined((reason or "")[:MAX_REASON])
        )
        return {"request_id": str(row.pk), "child_thread_id": str(child.pk), **decided}
    values = _values(body)
    gone = [n for n in wait.get("missing") or [] if not values.get(n, "").strip()]
    if gone:
        raise Invalid("Missing required scoped environment variables: " + ", ".join(gone))
    unknown = sorted(set(values) - set(wait.get("required") or []))
    if unknown:
        raise Invalid("Not asked for by this request: " + ", ".join(unknown))
    env_apply(
        scope="thread",
        thread=child,
        actor=actor,
        patch=EnvPatch(patch=values, type_patch=_types(body, set(values))),
    )
    decided = tool_call_decide(
        thread, str(row.tool_call_id), waits.variables_supplied(sorted(values))
    )
    return {
        "request_id": str(row.pk),
        "child_thread_id": str(child.pk),
        "status": "success",
        "resumed": decided["status"] == "resumed",
    }
