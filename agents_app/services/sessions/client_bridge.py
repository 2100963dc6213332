"""The client bridge: tool calls that run in the client (a prompt tool entry with
``client: true``, the reference's forwarded tools), delivered over ``WS
/api/threads/{id}/bridge`` and answered over that socket or by ``POST …/tool-result``.

The call itself is a waiting call like an approval (``runtime.core.waits``, ``tool_waits``):
its result row is stored ``pending`` and the session parks, no worker held. Each
delivery to a bridge socket mints a fresh random ``delivery_token`` (64 hex) that
travels only in that socket's ``tool_request`` frame; the row keeps only its SHA-256.
A result counts only with the token of the latest delivery, checked in constant time
under the thread lock, and only while the call still waits: a stale, forged or second
result changes nothing and is answered ``{"status": "ignored"}`` as the reference does.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from django.db import transaction

from agents_app.base.errors import Conflict, Invalid, NotFound
from agents_app.models import Message, Thread
from agents_app.services.sessions import tool_waits
from runtime.core import waits

TOKEN_HASH = "delivery_token_hash"
MAX_TOKEN = 256
IGNORED = {"status": "ignored"}


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _client_rows(thread_id: Any) -> Any:
    return tool_waits.waiting_rows(thread_id).filter(
        **{f"metadata__{waits.WAIT_KEY}__kind": "client"}
    )


def waiting_client_calls(thread_id: Any) -> list[str]:
    """The ids of the thread's calls waiting for the client, oldest first."""
    return [
        str(call_id)
        for call_id in _client_rows(thread_id)
        .order_by("created_at")
        .values_list("tool_call_id", flat=True)
    ]


@transaction.atomic
def dispatch(thread_id: Any, tool_call_id: str) -> tuple[dict[str, Any], str] | None:
    """The ``tool_request`` frame for a call still waiting for the client, and its token;
    ``None`` when it no longer waits. A new delivery replaces the previous token."""
    row = (
        _client_rows(thread_id)
        .select_for_update()
        .filter(tool_call_id=tool_call_id)
        .order_by("-created_at")
        .first()
    )
    if row is None:
        return None
    token = secrets.token_hex(32)
    wait = {**row.metadata[waits.WAIT_KEY], TOKEN_HASH: _hash(token)}
    wait["delivered_at"] = waits.now_ms()
    Message.objects.filter(pk=row.pk).update(metadata={**row.metadata, waits.WAIT_KEY: wait})
    frame = {
        "type": "tool_request",
        "durable": True,
        "toolCallId": tool_call_id,
        "tool": wait.get("tool") or row.name,
        "args": wait.get("arguments") if wait.get("arguments") is not None else {},
        "requestPermission": None,
        "risk": None,
        "generation": 0,
        "deliveryToken": token,
    }
    return frame, token


def still_waiting(thread_id: Any, tool_call_ids: list[str]) -> set[str]:
    """Which of ``tool_call_ids`` still wait for the client."""
    rows = _client_rows(thread_id).filter(tool_call_id__in=tool_call_ids)
    return {str(v) for v in rows.values_list("tool_call_id", flat=True)}


def result_from_body(body: Any) -> dict[str, Any]:
    """The reference's ``POST …/tool-result`` body for a client result, checked:
    ``{tool_call_id, ok, result?, error?, client_id?, generation?, delivery_token}``."""
    if not isinstance(body, dict):
        raise Invalid("Body must be a JSON object")
    if not isinstance(body.get("tool_call_id"), str) or not body["tool_call_id"]:
        raise Invalid("tool_call_id required")
    if not isinstance(body.get("delivery_token"), str) or not body["delivery_token"]:
        raise Invalid("delivery_token required")
    error = body.get("error")
    if error is not None and not isinstance(error, str):
        raise Invalid("error must be a string")
    return body


@transaction.atomic
def deliver(thread: Thread, body: dict[str, Any]) -> dict[str, Any]:
    """Record the client's result when ``delivery_token`` is the latest delivery's and the
    call still waits, then resume the session (``{"status": "resumed", "side"}``);
    anything else is ``{"status": "ignored"}`` and changes nothing."""
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    token = body["delivery_token"]
    row = (
        _client_rows(locked.pk)
        .filter(tool_call_id=body["tool_call_id"])
        .order_by("-created_at")
        .first()
    )
    if row is None or len(token) > MAX_TOKEN:
        return dict(IGNORED)
    expected = str(row.metadata[waits.WAIT_KEY].get(TOKEN_HASH) or "")
    if not expected or not hmac.compare_digest(expected, _hash(token)):
        return dict(IGNORED)
    decision = waits.client_result(body.get("ok") is True, body.get("result"), body.get("error"))
    try:
        answer = tool_waits.tool_call_decide(locked, body["tool_call_id"], decision)
    except (Conflict, NotFound):
        return dict(IGNORED)
    return {"status": answer["status"], "side": answer["side"]}
