"""A2A tasks (``/a2a``, docs/api.md "A2A"): what a task is here, read and decided.

A task is one session of a thread (``ThreadSession``: its id is the task's id); its
``contextId`` is the thread. This module reads a task as the protocol sees it
(``task_view``: its state, the user message that started it, the agent's replies, the
files the session wrote) and takes the decisions a client may make on it: answer a tool
call that waits for approval (``task_answer``), stop it (``task_cancel``). It runs
nothing: new turns go through the OpenAI door's own orchestration
(``orchestration/openai_turns.py``), so publishing, audience, limits and budgets are the
thread API's, and the edge (``api/a2a_v1.py``) speaks the wire.

Every refusal is an ``A2AError``: a JSON-RPC error code, the sentence the client reads,
and the HTTP status (200 for a JSON-RPC error, as the protocol's binding answers them;
401 and 404 only where the request never reaches an agent).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from django.db import transaction
from django.db.models import Q

from agents_app.base.code_registry import get_registry
from agents_app.base.errors import DomainError, NotFound, RateLimited
from agents_app.models import Agent, Message, Prompt, Thread, ThreadFile, ThreadSession
from agents_app.selectors import access_thread
from agents_app.services.doors.openai_compat import OpenAIError
from agents_app.services.env.redaction import thread_redactor
from agents_app.services.sessions import input_requests, tool_waits
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.threads.files import file_bytes
from runtime.core import waits

# JSON-RPC's codes, and A2A's (a2a-sdk's ``JSON_RPC_ERROR_CODE_MAP``).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
EXTENDED_CARD_NOT_CONFIGURED = -32007
VERSION_NOT_SUPPORTED = -32009
# Ours, in JSON-RPC's range for server errors (A2A names none for these).
LIMIT_REACHED = -32050  # a usage limit or a spending budget (``data.retryAfter``)
CONFLICT = -32051  # the thread is busy, terminated, or the call was decided already
NOT_AUTHENTICATED = -32052  # HTTP 401
AGENT_NOT_FOUND = -32053  # HTTP 404
FORBIDDEN = -32054  # the caller may read the task but not act on it

INLINE_MAX = 1_000_000  # bytes of a file artifact sent inline; larger ones by URL
INLINE_TOTAL = 4_000_000  # ... and of all a task's file artifacts together
MAX_FILE_ARTIFACTS = 100  # files listed per task (a thread may hold thousands)
ANSWER_ARTIFACT = "answer"
APPROVE_WORDS = frozenset({"approve", "approved", "yes", "y", "ok", "allow", "run it"})
# How to answer an MCP server's question over A2A (it has no plain-text answer).
INPUT_HOW = (
    'send a data part {"action": "accept", "content": {...}} (the fields the server asks '
    'for), {"action": "decline"} or {"action": "cancel"} (with "toolCallId" when several '
    "calls wait)"
)

State = Literal[
    "submitted", "working", "input-required", "completed", "canceled", "failed", "rejected"
]
FINAL_STATES = frozenset({"completed", "canceled", "failed", "rejected"})


class A2AError(Exception):
    def __init__(
        self,
        code: int,
        message: str,
        *,
        http_status: int = 200,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status
        self.data = data


def invalid_params(message: str) -> A2AError:
    return A2AError(INVALID_PARAMS, message)


def task_not_found(task_id: str) -> A2AError:
    return A2AError(TASK_NOT_FOUND, f"Task not found: {task_id[:100]}")


def from_openai(exc: OpenAIError) -> A2AError:
    """A refusal of the turn orchestration the OpenAI door shares, in A2A's terms."""
    if exc.status == 429:
        return A2AError(
            LIMIT_REACHED,
            exc.message,
            data={"reason": "LIMIT_REACHED", "retryAfter": exc.retry_after},
        )
    if exc.status in (409, 423):
        return A2AError(CONFLICT, exc.message, data={"reason": exc.code or "CONFLICT"})
    if exc.status in (400, 403, 404, 413, 422):
        return A2AError(INVALID_PARAMS, exc.message)
    return A2AError(INTERNAL_ERROR, exc.message)


def from_domain(exc: DomainError) -> A2AError:
    if isinstance(exc, RateLimited):
        return A2AError(LIMIT_REACHED, exc.message, data={"retryAfter": exc.retry_after})
    if exc.status in (409, 423):
        return A2AError(CONFLICT, exc.message)
    if exc.status == 403:
        return A2AError(FORBIDDEN, exc.message)
    return A2AError(INVALID_PARAMS, exc.message)


# --- a task ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    """A message of the task: the user's that started it, or one of the agent's replies."""

    id: str
    role: Literal["user", "agent"]
    text: str
    files: list[str] = field(default_factory=list)  # the user's attachments, by name


@dataclass(frozen=True)
class FileArtifact:
    path: str
    name: str
    mime_type: str
    size: int
    data: bytes | None  # inline when at most INLINE_MAX bytes; else read by URL


@dataclass(frozen=True)
class Waiting:
    tool_call_id: str
    tool: str
    kind: str
    arguments: Any
    request_id: str = ""  # the waiting row's id (an MCP question's ``input_requests`` id)
    question: str = ""  # an MCP server's (first) question, for ``input`` waits


@dataclass(frozen=True)
class TaskView:
    id: str
    context_id: str
    state: State
    timestamp: datetime
    question: Said | None
    replies: list[Said]
    files: list[FileArtifact]
    waiting: list[Waiting]
    detail: str  # why it failed or was stopped; what it waits for

    @property
    def answer(self) -> str:
        """The task's text: its replies, apart by a blank line (as ``/v1`` joins them)."""
        return "\n\n".join(r.text for r in self.replies if r.text)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def interrupted(self) -> bool:
        """Final, or waiting for the client: a stream of the task ends here."""
        return self.final or self.state == "input-required"


def task_of(
    task_id: str, user: Any, agent_name: str, *, action: Literal["view", "change"] = "view"
) -> ThreadSession:
    """The session ``task_id`` of a thread of ``agent_name`` that ``user`` may ``action``;
    ``A2AError(TASK_NOT_FOUND)`` otherwise (another person's task is not confirmed to exist).
    """
    try:
        pk = uuid.UUID(task_id)
    except (ValueError, TypeError, AttributeError):
        raise task_not_found(str(task_id)) from None
    session = ThreadSession.objects.filter(pk=pk).select_related("thread__agent").first()
    if session is None or session.thread.agent.name != agent_name:
        raise task_not_found(task_id)
    try:
        access_thread(str(session.thread_id), user, action="view")
    except DomainError:
        raise task_not_found(task_id) from None
    if action != "view":
        try:
            access_thread(str(session.thread_id), user, action=action)
        except DomainError as exc:
            raise A2AError(FORBIDDEN, exc.message) from None
    return session


def task_session(thread_id: str, question_id: str) -> ThreadSession:
    """The session a just-posted message started (or, when another started first, the
    thread's active one, which takes the message before its next step)."""
    thread = Thread(pk=thread_id)
    row = ThreadSession.objects.filter(thread_id=thread_id, root_message_id=question_id).first()
    row = row or sessions.active_session(thread) or sessions.parked_session(thread)
    if row is None:  # a session that ended at once leaves its row: read above
        raise A2AError(INTERNAL_ERROR, "The message was posted but no session took it.")
    return row


def _state(session: ThreadSession, waiting: list[Waiting]) -> State:
    status = session.status
    if status == ThreadSession.Status.QUEUED:
        return "submitted" if session.started_at is None else "working"
    if status == ThreadSession.Status.RUNNING:
        return "working"
    if status == ThreadSession.Status.PARKED:
        return "input-required" if waiting else "working"
    if status == ThreadSession.Status.COMPLETED:
        return "completed"
    if status == ThreadSession.Status.STOPPED:
        return "canceled"
    return "failed"


def task_view(session_id: str) -> TaskView:
    """The task as it stands (stored rows only, redacted as the thread API answers)."""
    session = ThreadSession.objects.get(pk=session_id)
    thread_id = str(session.thread_id)
    redactor = thread_redactor(thread_id)
    question = (
        Message.objects.filter(thread_id=thread_id, pk=session.root_message_id).first()
        if session.root_message_id
        else None
    )
    since = question.created_at if question is not None else None
    rows = Message.objects.filter(
        thread_id=thread_id,
        depth=0,
        role=Message.Role.ASSISTANT,
        status=Message.Status.COMPLETED,
        abandoned=False,
        silent=False,
    )
    if since is not None:
        rows = rows.filter(created_at__gt=since)
        following = _next_question(thread_id, since)
        if following is not None:
            rows = rows.filter(created_at__lt=following)
    replies = [
        Said(str(r.pk), "agent", redactor.text(r.content or ""))
        for r in rows.order_by("created_at").only("id", "content")
    ]
    waiting = _waiting(thread_id) if session.status == ThreadSession.Status.PARKED else []
    state = _state(session, waiting)
    return TaskView(
        id=str(session.pk),
        context_id=thread_id,
        state=state,
        timestamp=session.ended_at or session.started_at or session.created_at,
        question=_question(question, redactor) if question is not None else None,
        replies=replies,
        files=_files(session),
        waiting=waiting,
        detail=redactor.text(_detail(session, state, waiting)),
    )


def _next_question(thread_id: str, since: int) -> int | None:
    value: int | None = (
        Message.objects.filter(
            thread_id=thread_id, depth=0, role=Message.Role.USER, created_at__gt=since
        )
        .order_by("created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    return value


def _question(row: Message, redactor: Any) -> Said:
    names = [str(a.get("name") or "") for a in row.attachments or [] if isinstance(a, dict)]
    return Said(str(row.pk), "user", redactor.text(row.content or ""), names)


def _waiting(thread_id: str) -> list[Waiting]:
    out = []
    for row in tool_waits.waiting_rows(thread_id).order_by("created_at"):
        wait = row.metadata[waits.WAIT_KEY]
        kind = str(wait.get("kind"))
        question = ""
        if kind == input_requests.KIND:
            server, asked, _ = input_requests.first_question(wait)
            question = f"The MCP server {server} asks: {asked}"
        out.append(
            Waiting(
                str(row.tool_call_id),
                str(wait.get("tool") or row.name),
                kind,
                wait.get("arguments"),
                str(row.pk),
                question,
            )
        )
    return out


def _files(session: ThreadSession) -> list[FileArtifact]:
    """The files the session wrote: changed since it was created, the user's attachments
    left out. (A later session of the thread that rewrites a file changes what an
    earlier task shows: the thread keeps one copy of each path.) Their bytes come inline
    up to ``INLINE_MAX`` each and ``INLINE_TOTAL`` in all; the rest by URL."""
    rows = ThreadFile.objects.filter(
        thread_id=session.thread_id, is_directory=False, updated_at__gte=session.created_at
    ).exclude(path__startswith="/attachments/")
    if session.ended_at is not None:
        rows = rows.filter(updated_at__lte=session.ended_at)
    out = []
    budget = INLINE_TOTAL
    for row in rows.order_by("path")[:MAX_FILE_ARTIFACTS]:
        inline = row.size <= min(INLINE_MAX, budget)
        budget -= row.size if inline else 0
        data = file_bytes(row) if inline else None
        out.append(FileArtifact(row.path, row.name, row.mime_type, row.size, data))
    return out


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else f"{text}."


def _detail(session: ThreadSession, state: State, waiting: list[Waiting]) -> str:
    if state == "input-required":
        return _waiting_detail(session, waiting)
    if state == "failed":
        return f"The agent's session failed: {session.error or 'no reason recorded'}"
    if state == "canceled":
        return "The task was canceled before the agent finished."
    return ""


def _waiting_detail(session: ThreadSession, waiting: list[Waiting]) -> str:
    calls = ", ".join(f"{w.tool} ({w.tool_call_id})" for w in waiting)
    if any(w.kind not in ("approval", input_requests.KIND) for w in waiting):
        return (
            f"The agent waits for {calls}, a tool its own client runs; A2A cannot answer it. "
            f"Answer it in the studio (thread {session.thread_id})."
        )
    said = []
    approvals = [f"{w.tool} ({w.tool_call_id})" for w in waiting if w.kind == "approval"]
    if approvals:
        said.append(
            f"The agent waits for approval to run {', '.join(approvals)}. Reply in this task: "
            '"approve" lets it run; any other reply refuses it, and the agent reads your '
            'reply as the reason (or send a data part {"approve": true|false, "reason": '
            '"…"}).'
        )
    for w in waiting:
        if w.kind == input_requests.KIND:
            said.append(
                f"{_sentence(w.question)} The call {w.tool} ({w.tool_call_id}) waits for "
                f"your answer: {INPUT_HOW}."
            )
    return " ".join(said)


# --- decisions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A client's reply to a task in ``input-required``."""

    approve: bool
    reason: str
    tool_call_id: str | None = None
    # A data part ``{action, content?}``: the answer to an MCP server's question.
    input: dict[str, Any] | None = None
    text: bool = False  # a plain-text reply (an MCP server's question cannot take one)


def answer_of(text: str, data: dict[str, Any] | None) -> Answer:
    """A reply's decision: a data part ``{approve, reason?, toolCallId?}`` (an approval) or
    ``{action, content?, toolCallId?}`` (an MCP server's question), else its text ("approve"
    and the like approve; anything else refuses, with the text as the reason)."""
    if data is not None:
        call = data.get("toolCallId")
        if call is not None and not isinstance(call, str):
            raise invalid_params("message: the data part's toolCallId must be a string")
        if "action" in data and "approve" not in data:
            body = {k: v for k, v in data.items() if k != "toolCallId"}
            return Answer(False, "", call, input=body)
        approve = data.get("approve")
        if not isinstance(approve, bool):
            raise invalid_params('message: a data part that answers a task needs "approve": bool')
        reason = data.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise invalid_params("message: the data part's reason must be a string")
        return Answer(approve, (reason or "").strip() or ("" if approve else "Refused"), call)
    words = text.strip()
    if not words:
        raise invalid_params("message: the task waits for an answer; the message has no text")
    if words.lower().rstrip(".!") in APPROVE_WORDS:
        return Answer(True, "", text=True)
    return Answer(False, words, text=True)


def task_answer(session: ThreadSession, user: Any, answer: Answer) -> None:
    """Decide the calls the task waits for (one, with ``answer.tool_call_id``); the session
    resumes once none waits (``tool_waits.resume_parked``)."""
    view = task_view(str(session.pk))
    if view.state != "input-required":
        raise _not_waiting(view)
    calls = [w for w in view.waiting if answer.tool_call_id in (None, w.tool_call_id)]
    if not calls:
        raise invalid_params(f"toolCallId: no call {answer.tool_call_id} waits in this task")
    if any(w.kind not in ("approval", input_requests.KIND) for w in calls):
        raise A2AError(UNSUPPORTED_OPERATION, view.detail)
    _fits(calls, answer)
    thread = access_thread(str(session.thread_id), user, action="change")
    try:
        # All or none: an answer that fits the first question but not the next records
        # neither (each is checked against its own question's schema as it is recorded).
        with transaction.atomic():
            for call in calls:
                if answer.input is not None:
                    input_requests.request_answer(thread, call.request_id, answer.input)
                    continue
                decision = waits.approval(answer.approve, answer.reason[: tool_waits.MAX_REASON])
                tool_waits.tool_call_decide(thread, call.tool_call_id, decision)
    except DomainError as exc:
        raise from_domain(exc) from exc


def _fits(calls: list[Waiting], answer: Answer) -> None:
    """Refuse an answer of the wrong shape for the calls it decides."""
    asked = [w for w in calls if w.kind == input_requests.KIND]
    if asked and answer.input is None:
        said = "a plain-text reply" if answer.text else 'a data part with "approve"'
        raise invalid_params(
            f"message: {said} cannot answer an MCP server's question ({asked[0].tool}, "
            f"{asked[0].tool_call_id}); {INPUT_HOW}."
        )
    if answer.input is not None and len(asked) < len(calls):
        raise invalid_params(
            'message: a data part with "action" answers an MCP server\'s question; a call '
            'waiting for approval takes "approve" (name one call with "toolCallId").'
        )


def _not_waiting(view: TaskView) -> A2AError:
    if view.final:
        return A2AError(
            UNSUPPORTED_OPERATION,
            f"Task {view.id} is {view.state}: a finished task takes no more messages. Send "
            f"the next message with contextId {view.context_id} (and no taskId): it "
            "continues the conversation as a new task.",
        )
    return A2AError(
        CONFLICT,
        f"Task {view.id} is {view.state}, not waiting for input: wait for it to finish "
        "(tasks/get, or resubscribe), then send the next message with its contextId.",
    )


def task_cancel(session: ThreadSession, user: Any) -> None:
    """Stop the task's session (the thread's stop: at its next safe point)."""
    view = task_view(str(session.pk))
    if view.final:
        raise A2AError(
            TASK_NOT_CANCELABLE, f"Task {view.id} is {view.state}: there is nothing to cancel."
        )
    try:
        thread = access_thread(str(session.thread_id), user, action="change")
        sessions.thread_stop(thread=thread)
    except NotFound:
        raise task_not_found(view.id) from None
    except DomainError as exc:
        raise from_domain(exc) from exc


def still_running(session_id: str) -> bool:
    return ThreadSession.objects.filter(
        pk=session_id,
        status__in=(ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING),
    ).exists()


# --- the Agent Card's skills -------------------------------------------------------------------


@dataclass(frozen=True)
class Skill:
    name: str
    description: str


def agent_skills(agent: Agent) -> list[Skill]:
    """What the agent can do, from the tools of its first side's prompt: code tools by
    their description, prompts and agents used as tools by theirs. An agent with no tool
    is one skill: answering, as its description says."""
    prompt = agent.side_a_prompt
    names = (
        list(prompt.tool_entries.order_by("position").values_list("name", flat=True))
        if prompt is not None
        else []
    )
    registry = get_registry().tools
    prompts = dict(Prompt.objects.filter(name__in=names).values_list("name", "tool_description"))
    agents = dict(Agent.objects.filter(name__in=names).values_list("name", "tool_description"))
    skills = []
    for name in dict.fromkeys(names):
        described = registry[name].description if name in registry else None
        described = described or prompts.get(name) or agents.get(name) or f"The tool {name}."
        skills.append(Skill(name, described))
    if not skills:
        skills.append(Skill(agent.name, agent.description or agent.title or agent.name))
    return skills


# --- listing -----------------------------------------------------------------------------------

MAX_PAGE = 100  # A2A's page size limit
DEFAULT_PAGE = 50

# The sessions' statuses behind each state a client may filter on.
_STATUSES: dict[str, tuple[str, ...]] = {
    "submitted": (ThreadSession.Status.QUEUED,),
    "working": (ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING),
    "input-required": (ThreadSession.Status.PARKED,),
    "completed": (ThreadSession.Status.COMPLETED,),
    "canceled": (ThreadSession.Status.STOPPED,),
    "failed": (ThreadSession.Status.FAILED,),
    "rejected": (),
}


@dataclass(frozen=True)
class TaskPage:
    views: list[TaskView]
    total: int
    next_offset: int | None


def task_list(
    user: Any,
    agent_name: str,
    *,
    context_id: str | None,
    state: State | None,
    after: datetime | None,
    size: int,
    offset: int,
) -> TaskPage:
    """The caller's tasks with this agent, newest first: the sessions of their threads of
    it (of the one thread ``context_id``, which they may view)."""
    sessions_qs = ThreadSession.objects.filter(thread__agent__name=agent_name)
    if context_id is not None:
        try:
            access_thread(context_id, user, action="view")
        except DomainError:
            raise invalid_params(f"contextId: no context {context_id[:100]} of yours") from None
        sessions_qs = sessions_qs.filter(thread_id=context_id)
    else:
        sessions_qs = sessions_qs.filter(thread__owner=user)
    if state is not None:
        sessions_qs = sessions_qs.filter(status__in=_STATUSES[state])
    if after is not None:
        sessions_qs = sessions_qs.filter(
            Q(ended_at__gt=after) | Q(ended_at__isnull=True, created_at__gt=after)
        )
    total = sessions_qs.count()
    ids = list(
        sessions_qs.order_by("-created_at", "-pk").values_list("pk", flat=True)[
            offset : offset + size
        ]
    )
    views = [task_view(str(pk)) for pk in ids]
    if state is not None:  # queued splits into submitted and working
        views = [v for v in views if v.state == state]
    following = offset + size if offset + size < total else None
    return TaskPage(views, total, following)
