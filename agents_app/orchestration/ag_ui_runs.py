"""Runs of the AG-UI door (``/ag-ui``): a front end's ``RunAgentInput``, opened as a turn of
``/v1``'s orchestration (``openai_turns.turn_open``: the agent offered to the caller now,
the thread theirs to post to and idle, usage limits and budgets), so there is no second
engine and no second set of rules.

**Which thread.** A front end names its conversation with a ``threadId`` of its own
choosing. One that is the id of one of our threads continues that thread (the caller must
be allowed to post to it). Any other is remembered: the first run creates a thread and
tags it ``ag-ui:<threadId>``; later runs of the same caller and agent with that
``threadId`` continue the thread the tag names. ``RUN_STARTED`` carries the front end's
``threadId`` (so its own bookkeeping holds) and ``metadata.threadId`` ours.

**A resume.** A run that ended on interrupts (tool calls waiting for someone:
``services/doors/ag_ui_interrupts.py``) is continued by a run whose ``resume`` answers
them: ``run_resume`` records the answers on the same thread, which resumes its parked
session, and the edge follows that session as the turn it still is.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents_app.base.errors import DomainError, NotFound
from agents_app.models import Agent, Message, Thread
from agents_app.orchestration.openai_turns import Opened, Turn, turn_open
from agents_app.selectors import access_thread
from agents_app.services.doors.ag_ui_interrupts import resume_decide, resume_session
from agents_app.services.doors.ag_ui_runs import (
    RunInput,
    run_history,
    run_rows,
    state_writes,
    thread_tag,
)
from agents_app.services.doors.openai_compat import Ask, OpenAIError, Said, invalid
from agents_app.services.threads.changes import ThreadChanges, thread_update
from agents_app.services.threads.values import value_set


def run_thread(user: Any, agent: Agent, client_thread_id: str) -> str | None:
    """Our thread a front end's ``threadId`` names, or ``None`` for a new one."""
    try:
        ours = uuid.UUID(client_thread_id)
    except ValueError:
        ours = None
    if ours is not None and Thread.objects.filter(pk=ours).exists():
        return str(ours)  # turn_open checks the caller may post to it
    # Only the caller's own threads: another person's tag must not lead into their thread.
    found = (
        Thread.objects.filter(
            owner=user, agent=agent, tags__contains=[thread_tag(client_thread_id)]
        )
        .order_by("-created_at")
        .values_list("pk", flat=True)
        .first()
    )
    return str(found) if found is not None else None


def run_open(*, user: Any, api_key_id: int | None, agent: Agent, run: RunInput) -> Opened:
    """Check and prepare ``run`` for ``user`` (``OpenAIError`` when it may not happen now):
    its thread found or created (and tagged), its ``state`` written. The post follows
    (``turn_post``), once the edge listens to the thread."""
    thread_id = run_thread(user, agent, run.thread_id)
    assert run.message is not None  # a resume goes through run_resume
    ask = Ask(
        api="chat",
        model=agent.name,
        message=run.message,
        history=run_history(run) if thread_id is None else [],
        thread_id=thread_id,
        previous=None,
        stream=True,
        include_usage=False,
    )
    opened = turn_open(user=user, api_key_id=api_key_id, ask=ask)
    try:
        if thread_id is None:
            tags = [*opened.thread.tags, thread_tag(run.thread_id)]
            thread_update(thread=opened.thread, changes=ThreadChanges(tags=tags), actor=user)
        if run.state is not None:
            _state_write(opened.thread, run.state)
    except BaseException:
        opened.give_back()
        raise
    return opened


def _state_write(thread: Thread, state: dict[str, Any]) -> None:
    for key, value in state_writes(str(thread.pk), state).items():
        try:
            value_set(thread=thread, key=key, value=value)
        except DomainError as exc:
            raise invalid(f"state.{key[:100]}: {exc.message}", f"state.{key[:100]}") from None


@dataclass(frozen=True)
class Resumed:
    """A resumed turn, and what the interrupted run already told the front end (the rows it
    showed, the calls whose results it could not show yet)."""

    turn: Turn
    shown: list[str]
    answered: list[str]


def run_resume(*, user: Any, agent: Agent, run: RunInput) -> Resumed:
    """Answer the interrupts ``run.resume`` names on the thread its ``threadId`` names (the
    caller may change it; ``OpenAIError`` otherwise): the parked session resumes once no
    call waits. The rows the interrupted run showed are noted first, so the resumed run
    tells only what is new."""
    thread_id = run_thread(user, agent, run.thread_id)
    thread = Thread.objects.filter(pk=thread_id, agent=agent).first() if thread_id else None
    try:
        if thread is None:
            raise NotFound("no such thread")
        access_thread(str(thread.pk), user, action="view")
    except DomainError:
        raise OpenAIError(
            404,
            f"threadId: no thread {run.thread_id[:100]} of this agent to resume",
            param="threadId",
            code="thread_not_found",
        ) from None
    try:
        access_thread(str(thread.pk), user, action="change")
    except DomainError as exc:
        raise OpenAIError(exc.status, exc.message, param="threadId") from None
    with transaction.atomic():
        session = resume_session(str(thread.pk))
        question = str(session.root_message_id or _last_question(thread))
        shown = [row.id for row in run_rows(str(thread.pk), question)]
        if run.state is not None:
            _state_write(thread, run.state)
        resume_decide(str(thread.pk), user, run.resume)
    ask = Ask("chat", agent.name, Said("user", ""), [], str(thread.pk), None, True, False)
    turn = Turn(str(thread.pk), question, agent.name, int(time.time()), ask)
    return Resumed(turn, shown, [a.interrupt_id for a in run.resume])


def _last_question(thread: Thread) -> str:
    row = (
        Message.objects.filter(thread=thread, depth=0, role=Message.Role.USER)
        .order_by("-created_at")
        .values_list("pk", flat=True)
        .first()
    )
    return str(row)
