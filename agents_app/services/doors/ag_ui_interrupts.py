"""AG-UI interrupts (``/ag-ui``, docs/api.md "AG-UI"): a run that stops on a tool call waiting
for someone, and the run that answers it.

A session parks when a tool call waits for a person (``requiresApproval``), for the client
that runs it (``client: true``), for scoped env values (a variables request:
``subagent_create``) or for the answer to an MCP server's question (kind ``input``; only its
first question is asked, as the chat does). The run then ends as AG-UI's human-in-the-loop
asks: ``RUN_FINISHED`` with the outcome ``{"type": "interrupt", "interrupts": [...]}``, one
interrupt per waiting call (``run_interrupts``: its id is the tool call's id; ``reason`` says
what it waits for, ``responseSchema`` what an answer holds). The front end answers with a new
``RunAgentInput`` on the same ``threadId`` whose ``resume`` entries name the interrupts
(``resume_entries`` reads them); ``resume_decide`` records each as the thread API's own
decision (``tool_waits.tool_call_decide``, ``variables_requests.request_answer``,
``input_requests.request_answer``), which resumes the same session once no call waits.
Nothing here runs anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from agents_app.base.errors import DomainError, Invalid
from agents_app.models import Message, Thread, ThreadSession
from agents_app.selectors import access_thread
from agents_app.services.doors.openai_compat import OpenAIError, invalid
from agents_app.services.env.redaction import thread_redactor
from agents_app.services.sessions import input_requests, tool_waits, variables_requests
from runtime.core import waits

MAX_RESUME = 100  # entries of one resume (a step's tool calls are fewer)
MAX_REASON = tool_waits.MAX_REASON
ID_MAX = 200

# What each kind of wait is called in an interrupt, and the answer it takes.
REASONS = {
    "approval": "tool_approval",
    "client": "client_tool",
    "variables": "variables_request",
    "input": "mcp_question",
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "approval": {
        "type": "object",
        "properties": {"approve": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["approve"],
    },
    "client": {
        "type": "object",
        "properties": {"result": {}, "error": {"type": "string"}},
    },
    "variables": {
        "type": "object",
        "properties": {
            "values": {"type": "object", "additionalProperties": {"type": "string"}},
            "types": {
                "type": "object",
                "additionalProperties": {"enum": ["text", "secret"]},
            },
        },
        "required": ["values"],
    },
}


@dataclass(frozen=True)
class ResumeAnswer:
    """One ``resume`` entry: the interrupt (a tool call id) and its answer."""

    interrupt_id: str
    resolved: bool  # "resolved"; False for "cancelled"
    payload: Any


# --- the interrupts of a parked run -----------------------------------------------------------


def run_interrupts(thread_id: str) -> list[dict[str, Any]]:
    """The thread's waiting calls as AG-UI ``Interrupt`` objects (camelCase), oldest first;
    empty when none waits. Arguments are redacted as the thread API shows them."""
    redactor = thread_redactor(thread_id)
    out = []
    for row in tool_waits.waiting_rows(thread_id).order_by("created_at"):
        wait = row.metadata[waits.WAIT_KEY]
        kind = str(wait.get("kind"))
        tool = str(wait.get("tool") or row.name)
        interrupt: dict[str, Any] = {
            "id": str(row.tool_call_id),
            "reason": REASONS.get(kind, kind),
            # An MCP server's question is the server's words: redacted like the arguments.
            "message": redactor.text(_message(kind, tool, wait)),
            "toolCallId": str(row.tool_call_id),
            "responseSchema": _schema(kind, wait),
            "metadata": {"tool": tool, "arguments": redactor.data(wait.get("arguments"))},
        }
        expires = wait.get("expires_at")
        if isinstance(expires, int):
            moment = datetime.fromtimestamp(expires / 1000, UTC)
            interrupt["expiresAt"] = moment.isoformat().replace("+00:00", "Z")
        out.append(interrupt)
    return out


def _schema(kind: str, wait: dict[str, Any]) -> dict[str, Any]:
    if kind != "input":
        return SCHEMAS.get(kind, {"type": "object"})
    _, _, asked = input_requests.first_question(wait)
    return {
        "type": "object",
        "properties": {"action": {"enum": list(input_requests.ACTIONS)}, "content": asked},
        "required": ["action"],
    }


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else f"{text}."


def _message(kind: str, tool: str, wait: dict[str, Any]) -> str:
    if kind == "input":
        server, question, _ = input_requests.first_question(wait)
        return (
            f"The MCP server {server} asks: {_sentence(question)} Resume with payload "
            '{action: "accept", content: {...}} (the fields of responseSchema.properties.'
            'content), {action: "decline"} or status "cancelled".'
        )
    if kind == "approval":
        return (
            f"The agent asks to run {tool}. Resume with payload {{approve: true}} to let it "
            'run, {approve: false, reason: "…"} (or status "cancelled") to refuse it.'
        )
    if kind == "client":
        return (
            f"The agent called {tool}, a tool its client runs. Resume with payload "
            '{result: …} (what it returned) or {error: "…"} (why it failed).'
        )
    missing = ", ".join(str(n) for n in wait.get("missing") or []) or "none"
    return (
        f"{tool} needs scoped env values ({missing}) before the subagent "
        f"{wait.get('agent_name') or ''} can start. Resume with payload "
        '{values: {NAME: "…"}} to supply them, or status "cancelled" to decline.'
    )


# --- a resume ---------------------------------------------------------------------------------


def resume_entries(value: Any) -> list[ResumeAnswer]:
    """A ``RunAgentInput``'s ``resume`` (AG-UI's ``ResumeEntry`` list), checked."""
    if not isinstance(value, list) or not value:
        raise invalid("resume: a non-empty list of {interruptId, status, payload?}", "resume")
    if len(value) > MAX_RESUME:
        raise invalid(f"resume: at most {MAX_RESUME} entries", "resume")
    out, seen = [], set()
    for index, raw in enumerate(value):
        where = f"resume.{index}"
        if not isinstance(raw, dict):
            raise invalid(f"{where}: expected an object", where)
        unknown = set(raw) - {"interruptId", "status", "payload", "metadata"}
        if unknown:
            name = sorted(unknown)[0][:100]
            raise invalid(f"{where}.{name}: not a field of a resume entry", f"{where}.{name}")
        interrupt_id = raw.get("interruptId")
        if not isinstance(interrupt_id, str) or not interrupt_id or len(interrupt_id) > ID_MAX:
            raise invalid(f"{where}.interruptId: required, an interrupt's id", where)
        if interrupt_id in seen:
            raise invalid(f"{where}.interruptId: {interrupt_id} is answered twice", where)
        seen.add(interrupt_id)
        status = raw.get("status")
        if status not in ("resolved", "cancelled"):
            raise invalid(f'{where}.status: "resolved" or "cancelled"', f"{where}.status")
        out.append(ResumeAnswer(interrupt_id, status == "resolved", raw.get("payload")))
    return out


def resume_session(thread_id: str) -> ThreadSession:
    """The thread's parked session a resume continues (409 when none waits)."""
    session = (
        ThreadSession.objects.filter(thread_id=thread_id, status=ThreadSession.Status.PARKED)
        .order_by("-created_at")
        .first()
    )
    if session is None or not tool_waits.has_waiting(thread_id):
        raise OpenAIError(
            409,
            "resume: no run of this thread waits for an answer (its interrupts were answered, "
            "or it was never interrupted); send a user message to continue it.",
            param="resume",
            code="nothing_to_resume",
        )
    return session


def resume_decide(thread_id: str, user: Any, answers: list[ResumeAnswer]) -> None:
    """Record each answer on its waiting call (the caller must be allowed to change the
    thread); the session resumes once no call waits. All are checked before any is
    recorded, so a bad entry changes nothing."""
    try:
        thread = access_thread(thread_id, user, action="change")
    except DomainError as exc:
        raise OpenAIError(exc.status, exc.message, param="threadId") from None
    rows = {str(r.tool_call_id): r for r in tool_waits.waiting_rows(thread_id)}
    # Every answer is checked before any is recorded, and all are recorded together.
    plans = []
    for index, answer in enumerate(answers):
        row = rows.get(answer.interrupt_id)
        if row is None:
            raise invalid(
                f"resume.{index}.interruptId: no interrupt {answer.interrupt_id} waits in this "
                "thread",
                f"resume.{index}.interruptId",
            )
        plans.append((row, _decision(row, answer, f"resume.{index}.payload")))
    try:
        with transaction.atomic():
            for row, decision in plans:
                _record(thread, row, decision, user)
    except DomainError as exc:
        raise OpenAIError(exc.status, exc.message, param="resume") from None


def _decision(row: Message, answer: ResumeAnswer, where: str) -> dict[str, Any]:
    """The thread API's decision (or a variables request's body) for ``answer``."""
    wait = row.metadata[waits.WAIT_KEY]
    kind = wait.get("kind")
    payload = answer.payload
    if kind == "input":
        body = payload if answer.resolved else {"action": "cancel"}
        try:
            input_requests.check_answer(wait, body)
        except Invalid as exc:
            raise invalid(f"{where}: {exc.message}", where) from None
        return {"input": body}
    if kind == "variables":
        if not answer.resolved:
            return {"variables": {"decline": True, "reason": "Cancelled by the client"}}
        if not isinstance(payload, dict) or not isinstance(payload.get("values"), dict):
            raise invalid(f'{where}: {{"values": {{NAME: "…"}}, "types"?}} is required', where)
        return {"variables": {"values": payload["values"], "types": payload.get("types") or {}}}
    if kind == "client":
        if not answer.resolved:
            return waits.client_result(False, error="Cancelled by the client")
        if not isinstance(payload, dict) or not ({"result", "error"} & set(payload)):
            raise invalid(f"{where}: {{result: …}} or {{error: string}} is required", where)
        error = payload.get("error")
        if error is not None:
            if not isinstance(error, str):
                raise invalid(f"{where}.error: a string", where)
            return waits.client_result(False, error=error[:MAX_REASON])
        return waits.client_result(True, payload.get("result"))
    if not answer.resolved:
        return waits.approval(False, "Cancelled by the client")
    approve = payload if isinstance(payload, bool) else None
    reason: Any = None
    if isinstance(payload, dict):
        approve, reason = payload.get("approve"), payload.get("reason")
    if not isinstance(approve, bool):
        raise invalid(f"{where}: {{approve: true|false, reason?: string}} is required", where)
    if reason is not None and not isinstance(reason, str):
        raise invalid(f"{where}.reason: a string", where)
    return waits.approval(approve, (reason or "")[:MAX_REASON])


def _record(thread: Thread, row: Message, decision: dict[str, Any], user: Any) -> None:
    if "input" in decision:
        input_requests.request_answer(thread, str(row.pk), decision["input"])
    elif "variables" in decision:
        variables_requests.request_answer(thread, str(row.pk), decision["variables"], user)
    else:
        tool_waits.tool_call_decide(thread, str(row.tool_call_id), decision)
