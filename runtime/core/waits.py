"""Tool calls that wait for a decision from outside the session.

A prompt's tool entry marked ``requiresApproval: true`` waits for a person to
approve or reject the call; one marked ``client: true`` waits for the client to
run it and send the result (the reference's forwarded tools). The call's result
row is stored at once with ``status: "pending"`` and a ``tool_wait`` object in
its metadata (kind, arguments, expiry); the session then parks (no worker holds
it) with its open step kept. Whoever decides writes ``decision`` into that
object (``decide``: exactly once, conditionally), and the resumed session turns
the decision into the call's result: approved calls run, everything else
becomes the result the model reads.

One wait is held instead of parked: a 2025-era MCP server's question in the middle of its
call (``live: true``, kind ``input``). The row and the decision are the same, but the session
keeps running and reads the decision itself (``runtime.step.tool_half``).
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from runtime.core.messages import Message, ToolCall
from runtime.core.results import ToolResult, failure, success

WAIT_KEY = "tool_wait"
DEFAULT_WAIT_SECONDS = 1800  # the reference's parked-call TTL (30 min)
# A held call (a 2025-era MCP server's mid-call question) keeps a worker and the server's
# request open, so it waits far less than a parked one.
DEFAULT_LIVE_QUESTION_SECONDS = 300
# ``tool_wait.live``: the call is held open by its session (not parked), which reads the
# decision itself: answering it queues no session.
LIVE_KEY = "live"
STOPPED_TEXT = "Execution stopped by user"
# "input": an MCP server asked the person a question (elicitation, docs/mcp.md).
WaitKind = Literal["approval", "client", "variables", "input"]


class ParkCall(Exception):
    """Raised by a tool's handler when its call must wait for a person before it can run
    (``subagent_create`` missing scoped env values: a variables request). The tool runner
    stores the call's result row ``pending`` with ``details`` in its ``tool_wait`` object
    and parks the session; the decided call runs the handler again. Where nothing can park
    (a sub-prompt, ``invoke_tool``) the call fails with ``refusal`` instead."""

    def __init__(self, kind: WaitKind, details: dict[str, Any], refusal: str) -> None:
        super().__init__(refusal)
        self.kind, self.details, self.refusal = kind, details, refusal


def now_ms() -> int:
    """Wall-clock milliseconds (expiry is compared across processes, not with the test clock)."""
    return int(time.time() * 1000)


def wait_of(row: Message | None) -> dict[str, Any] | None:
    """The ``tool_wait`` object of a pending result row (``None`` for any other row)."""
    if row is None or row.role != "tool":
        return None
    wait = (row.metadata or {}).get(WAIT_KEY)
    return wait if isinstance(wait, dict) else None


def decision_of(row: Message | None) -> dict[str, Any] | None:
    """The decision recorded on a waiting call, or ``None`` while it still waits."""
    wait = wait_of(row)
    decision = wait.get("decision") if wait else None
    return decision if isinstance(decision, dict) else None


def waiting(row: Message | None) -> bool:
    """Whether the row is a call still waiting for its decision."""
    return (
        row is not None
        and row.status == "pending"
        and wait_of(row) is not None
        and (decision_of(row) is None)
    )


def wait_object(kind: WaitKind, call: ToolCall, seconds: int, now: int) -> dict[str, Any]:
    """The ``tool_wait`` metadata of a newly parked call."""
    try:
        arguments: Any = json.loads(call["function"]["arguments"] or "{}")
    except ValueError:
        arguments = call["function"]["arguments"]
    return {
        "kind": kind,
        "tool": call["function"]["name"],
        "arguments": arguments,
        "requested_at": now,
        "expires_at": now + seconds * 1000,
    }


def decide(row: Message, decision: dict[str, Any]) -> Message | None:
    """``row`` with ``decision`` recorded, or ``None`` when it was decided already."""
    if not waiting(row):
        return None
    wait = {**(wait_of(row) or {}), "decision": decision}
    return row.copy(metadata={**row.metadata, WAIT_KEY: wait})


def approval(approve: bool, reason: str | None = None) -> dict[str, Any]:
    """A person's decision on an approval."""
    if approve:
        return {"type": "approved"}
    return {"type": "rejected", "reason": (reason or "").strip() or "No reason given"}


def client_result(ok: bool, result: Any = None, error: str | None = None) -> dict[str, Any]:
    """The client's result of a client-run call."""
    return {"type": "client_result", "ok": ok, "result": result, "error": error}


def variables_supplied(names: list[str]) -> dict[str, Any]:
    """A person supplied a variables request's values (the names only: values live in env)."""
    return {"type": "variables_supplied", "names": names}


def variables_declined(reason: str | None = None) -> dict[str, Any]:
    """A person declined a variables request."""
    return {"type": "declined", "reason": (reason or "").strip() or "No reason given"}


def input_answered(action: str, content: dict[str, Any] | None = None) -> dict[str, Any]:
    """A person's answer to an MCP server's question: accept (with values), decline, cancel."""
    return {"type": "input_answered", "action": action, "content": content or {}}


def expired() -> dict[str, Any]:
    return {"type": "expired"}


def stopped() -> dict[str, Any]:
    return {"type": "stopped"}


def result_for(decision: dict[str, Any], wait: dict[str, Any]) -> ToolResult | None:
    """The result the model reads for a decided call; ``None`` when the call must run now."""
    kind = decision.get("type")
    if kind in ("approved", "variables_supplied", "input_answered"):
        return None  # the call runs (again) now
    if kind == "rejected":
        return failure(f"The user rejected this tool call: {decision.get('reason')}")
    if kind == "declined":
        agent = wait.get("agent_name") or "the subagent"
        return failure(
            f'The user declined to provide the scoped environment variables for "{agent}", '
            f"so it was not created: {decision.get('reason')}"
        )
    if kind == "expired":
        who = {
            "approval": "approval",
            "variables": "the requested variables",
            "input": "the person's answer to the MCP server's question",
        }.get(str(wait.get("kind")), "the client's result")
        return failure(f"The tool call timed out waiting for {who}.")
    if kind == "stopped":
        return failure(STOPPED_TEXT)
    if kind == "client_result":
        if decision.get("ok"):
            value = decision.get("result")
            if value is None:
                return success("Tool executed successfully")
            return success(value if isinstance(value, str) else json.dumps(value))
        return failure(str(decision.get("error") or "The client reported an error."))
    return failure(f"Unknown decision on this tool call: {kind}")
