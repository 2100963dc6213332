"""Asking an agent from outside, as a tool (what ``/mcp`` serves, docs/mcp.md).

Orchestration, not a service: creating a thread runs the engine's hooks
(``thread_creation``), which services may not import.

``agent_ask`` is the thread API's two steps in one: a new thread owned by the caller
(or the caller's given thread, with the thread API's access rule), then
``message_post``, which dispatches the session on commit to the executor (in this
process or a Celery worker). ``ask_progress`` reads how far that session got, so
the caller can wait for the answer and report progress meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents_app.base.errors import Invalid, NotFound
from agents_app.models import Agent, Message, QueuedMessage, Thread, ThreadSession
from agents_app.orchestration.thread_creation import thread_create
from agents_app.selectors import access_thread, agents_for
from agents_app.services.threads.messages import message_post

ACTIVE = (ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING)


def exposed_agents(user: Any) -> list[Agent]:
    """Agents offered as tools (``exposeAsTool``) among those offered to ``user`` (drafts
    and other groups' agents are absent: ``selectors.agents_for``)."""
    return list(agents_for(user).filter(expose_as_tool=True).order_by("name"))


@dataclass(frozen=True)
class Ask:
    thread_id: str
    message_id: str


def agent_ask(*, user: Any, agent_name: str, message: str, thread_id: str | None = None) -> Ask:
    """Post ``message`` to ``agent_name`` in a new thread, or in ``thread_id`` if given."""
    agent = agents_for(user).filter(name=agent_name, expose_as_tool=True).first()
    if agent is None:
        raise NotFound(f"Agent not found or not exposed as a tool: {agent_name}")
    if thread_id:
        thread = access_thread(thread_id, user, action="change")
        if thread.agent_id != agent.pk:
            raise Invalid(f"Thread {thread_id} belongs to agent '{thread.agent.name}'.")
    else:
        thread = thread_create(user=user, agent_name=agent.name)
    posted = message_post(thread=thread, role="user", content=message)
    return Ask(str(thread.pk), posted.message_id)


@dataclass(frozen=True)
class AskProgress:
    done: bool
    steps: int  # messages stored since the question (any depth)
    latest: str  # what the last of them is, in a few words
    answer: str
    error: str


def ask_progress(ask: Ask) -> AskProgress:
    """Where the session answering ``ask`` is (stored, redacted rows only)."""
    thread = Thread.objects.get(pk=ask.thread_id)
    question = Message.objects.filter(thread=thread, pk=ask.message_id).first()
    if question is None:
        # Still queued (behind a running session) or not yet taken by its session.
        waiting = QueuedMessage.objects.filter(pk=ask.message_id).exists()
        return AskProgress(False, 0, "queued" if waiting else "starting", "", "")
    # Whether a session still runs is read before its rows: a session that ended before this
    # read stored its reply before it ended, so the rows read next hold it. Read the other way
    # round, a session ending between the two reads was "done" with the rows from before its
    # reply, and the answer was empty.
    active = ThreadSession.objects.filter(thread=thread, status__in=ACTIVE).exists()
    after = Message.objects.filter(thread=thread, created_at__gt=question.created_at)
    rows = list(after.order_by("created_at").only("role", "name", "depth", "content", "status"))
    answer = next(
        (
            m.content or ""
            for m in reversed(rows)
            if m.role == "assistant" and m.depth == 0 and m.status == "completed"
        ),
        "",
    )
    error = ""
    if not active:
        last = ThreadSession.objects.filter(thread=thread).order_by("-created_at").first()
        if last is not None and last.status == ThreadSession.Status.FAILED:
            error = last.error or "The session failed."
    return AskProgress(not active, len(rows), _latest(rows), answer, error)


def _latest(rows: list[Message]) -> str:
    if not rows:
        return "thinking"
    last = rows[-1]
    if last.role == "tool":
        return f"tool {last.name} answered"
    return "calling tools" if last.role == "assistant" and last.status != "completed" else last.role
