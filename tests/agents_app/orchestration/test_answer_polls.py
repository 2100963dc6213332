"""``/mcp``'s asks poll ``ask_progress``, and ``/v1``'s turns ``turn_state``, until the session
ends: "done" comes with the stored answer, even when the session ends while a poll reads (a
CI run's ``/mcp`` test got "done" with an empty answer: the rows were read before the reply
was stored, whether a session still ran after the session had ended)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from agents_app.models import Message, Thread, ThreadSession
from agents_app.orchestration.agent_calls import Ask, ask_progress
from agents_app.services.doors.openai_compat import turn_state
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def _ends_during(sql_marker: str, end: Callable[[], None]) -> Any:
    """An execute wrapper that runs ``end`` (another writer's commit) right after the first
    statement whose SQL contains ``sql_marker``."""
    fired: list[bool] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if not fired and sql_marker in sql:
            fired.append(True)
            end()
        return result

    return wrapper


# Right after the poll reads the rows since the question, or whether a session still runs.
MOMENTS = pytest.mark.parametrize(
    "after",
    ['"agents_app_message"."created_at" >', 'FROM "agents_app_threadsession"'],
    ids=["rows", "sessions"],
)


def _turn(thread: Thread) -> tuple[Message, Callable[[], None]]:
    """A question, its running session and its pending reply; and what the session's last
    commit does: the reply completed, then the session ended."""
    question = Message.objects.create(thread=thread, role="user", content="What is it?")
    session = ThreadSession.objects.create(thread=thread, status="running")
    reply = Message.objects.create(
        thread=thread, role="assistant", content="", status="pending", depth=0
    )

    def end() -> None:
        Message.objects.filter(pk=reply.pk).update(content="The answer is 42.", status="completed")
        ThreadSession.objects.filter(pk=session.pk).update(status="completed")

    return question, end


def _poll(read: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
    seen = []
    for _ in range(3):
        seen.append(read())
        if done(seen[-1]):
            return seen[-1]
    raise AssertionError(seen)


def _mcp_ask(question: Message) -> tuple[Callable[[], Any], Callable[[Any], str]]:
    ask = Ask(str(question.thread_id), str(question.pk))
    return (lambda: ask_progress(ask)), (lambda progress: progress.answer)


def _v1_turn(question: Message) -> tuple[Callable[[], Any], Callable[[Any], str]]:
    return (lambda: turn_state(str(question.thread_id), str(question.pk))), (
        lambda state: state.answer()
    )


@MOMENTS
@pytest.mark.parametrize("door", [_mcp_ask, _v1_turn], ids=["mcp-ask", "v1-turn"])
def test_a_poll_is_done_with_the_stored_answer_when_the_session_ends_mid_poll(
    alice: Any, thread_of: Any, after: str, door: Any
) -> None:
    question, end = _turn(thread_of(alice))
    read, answer = door(question)
    with connection.execute_wrapper(_ends_during(after, end)):
        result = _poll(read, lambda r: r.done)
    assert answer(result) == "The answer is 42.", result
