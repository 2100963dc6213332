"""Turns of the OpenAI-compatible API (``/v1``): a client's message, answered by an agent.

Orchestration, like ``agent_calls`` (what ``/mcp`` asks): a new conversation creates a
thread, which runs the agent's hooks (``thread_creation``). A turn is opened, then posted:
``turn_open`` decides everything before the message exists (the model is an agent the
caller is offered now, the thread they continue is theirs to post to and idle, their usage
limits and budgets, a new thread and its history); the edge then joins the thread's live
frames and calls ``turn_post``, so not one frame of the answer comes before it listens.
Each acts as the API key's user with their rights at that moment (docs/automation.md,
"The owner rule", applies to people too: ``owner_rights.thread_to_post``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agents_app.base.errors import DomainError, NotFound
from agents_app.models import Agent, Thread
from agents_app.orchestration.thread_creation import thread_create
from agents_app.selectors import access_thread, offered_agent
from agents_app.services.access import limits
from agents_app.services.automation import owner_rights
from agents_app.services.doors.openai_compat import (
    Ask,
    OpenAIError,
    from_domain,
    history_write,
    previous_check,
)
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.threads.messages import message_post

BUSY = (
    "The agent is still answering in this thread (or waits for a tool call to be decided): "
    "send the next message when that answer has finished."
)


@dataclass
class Opened:
    """A turn decided and its thread ready; the message is not posted yet."""

    ask: Ask
    thread: Thread
    agent: Agent
    created: int  # seconds, the answer's ``created``
    taken: list[limits.Hit] = field(default_factory=list)

    @property
    def thread_id(self) -> str:
        return str(self.thread.pk)

    def give_back(self) -> None:
        for hit in self.taken:
            hit.refund()
        self.taken = []


@dataclass(frozen=True)
class Turn:
    """A posted turn: the thread, and the user message the session answers."""

    thread_id: str
    question_id: str
    model: str
    created: int
    ask: Ask


def turn_open(*, user: Any, api_key_id: int | None, ask: Ask) -> Opened:
    """Check and prepare ``ask`` for ``user``: ``OpenAIError`` when it may not happen now.

    Counts ``message_post`` (and ``thread_create`` for a new thread) in the user's and the
    key's usage limits, as the thread API does; ``Opened.give_back`` returns them when the
    turn goes no further."""
    taken: list[limits.Hit] = []
    try:
        agent = _model(user, ask.model)
        if ask.thread_id is None:
            taken.append(limits.action_hit("thread_create", user=user, api_key_id=api_key_id))
        taken.append(limits.action_hit("message_post", user=user, api_key_id=api_key_id))
        if ask.thread_id is not None:
            thread = _continued(user, agent, ask)
        else:
            # A new session would start with the post: refused before a thread exists.
            limits.budget_check(Thread(owner=user, agent=agent))
            thread = thread_create(user=user, agent_name=agent.name, agent=agent)
            history_write(thread, ask.history)
        return Opened(ask, thread, agent, int(time.time()), taken)
    except BaseException as exc:
        for hit in taken:
            hit.refund()
        if isinstance(exc, DomainError):
            raise from_domain(exc) from exc
        raise


def _model(user: Any, name: str) -> Agent:
    try:
        return offered_agent(user, name)
    except NotFound:
        # OpenAI's words for a model the caller may not use: a draft's or another group's
        # agent is not confirmed to exist (as GET /api/agents leaves it out).
        raise OpenAIError(
            404,
            f"The model '{name[:200]}' does not exist or you do not have access to it.",
            param="model",
            code="model_not_found",
        ) from None


def _continued(user: Any, agent: Agent, ask: Ask) -> Thread:
    assert ask.thread_id is not None
    param = "previous_response_id" if ask.previous is not None else None
    try:
        thread = owner_rights.thread_to_post(ask.thread_id, user)
    except DomainError as exc:
        raise from_domain(exc, param=param) from exc
    if thread.agent_id != agent.pk:
        raise OpenAIError(
            400,
            f"Thread {ask.thread_id} belongs to the model '{thread.agent.name}', not "
            f"'{agent.name}'.",
            param="model",
        )
    if ask.previous is not None:
        previous_check(thread, ask.previous)
    state = sessions.session_state(thread)
    if state.active or state.parked:
        raise OpenAIError(409, BUSY, code="thread_busy")
    return thread


def turn_post(opened: Opened) -> Turn:
    """Post the turn's message; the session starts on commit (the executor)."""
    ask = opened.ask
    try:
        posted = message_post(
            thread=opened.thread,
            role="user",
            content=ask.message.content,
            attachments=ask.message.attachments,
        )
    except BaseException as exc:
        opened.give_back()
        if isinstance(exc, DomainError):
            raise from_domain(exc) from exc
        raise
    opened.taken = []
    return Turn(opened.thread_id, posted.message_id, opened.agent.name, opened.created, ask)


def turn_stop(turn: Turn, user: Any) -> None:
    """Stop the turn's session: its client went away, nobody reads the answer."""
    sessions.thread_stop(thread=access_thread(turn.thread_id, user, action="change"))
