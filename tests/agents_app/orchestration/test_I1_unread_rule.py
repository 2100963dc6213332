"""Issue #54, row I1 (spec 0.2.0's unread rule): a thread's ``last_message_at`` moves on a
user's non-empty post and when a visible terminal assistant reply lands (an answer, an
attachment-only reply, a failed row with text), never on mid-turn tool steps, silent rows or
sub-prompt rows; it goes out in the ``thread_activity`` frame and the thread list's JSON, and
costs no statement of its own (it rides in the engine's one-statement commit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from agents_app import wire
from agents_app.base.code_registry import reset_registry
from agents_app.bridge import fast_commit
from agents_app.bridge.store import commit_rows
from agents_app.broadcast.events import REGISTRY_ALL
from agents_app.models import Thread
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.saves import save_definitions
from runtime.core.messages import Message, make_tool_call, new_id
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.store.protocol import Commit
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import _api_hosts, client_for  # noqa: F401
from tests.agents_app.api.test_api_sessions import _active_session, _post
from tests.agents_app.orchestration.test_session_start_reads import Statements, _activity_frames

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)
SEEN_MID_TURN: list[datetime | None] = []


@define_tool("Looks at the thread's unread stamp while the turn is still running.")
async def peek_unread(state: Any) -> str:
    row = await Thread.objects.aget(pk=state.thread_id)
    SEEN_MID_TURN.append(row.last_message_at)
    return "looked"


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    SEEN_MID_TURN.clear()
    reset_registry(Registry(peek_unread))
    yield
    reset_registry(None)


def _thread(user: Any) -> Thread:
    script = [{"tool_calls": [{"name": "peek_unread", "arguments": {}}]}, {"content": "Done."}]
    save_definitions(
        [
            ("model", ModelDefinition(name="m", provider="test", model="s", script=script)),
            ("prompt", PromptDefinition(name="p", model="m", prompt="x", tools=["peek_unread"])),
            ("agent", AgentDefinition(name="unread", side_a=SideConfig(prompt="p"))),
        ],
        strict_code_names=False,
    )
    return thread_create(user=user, agent_name="unread")


def _age(thread: Thread) -> None:
    """Back-date the stamp, so a move is visible even in the wire's whole seconds."""
    Thread.objects.filter(pk=thread.pk).update(last_message_at=LONG_AGO)


async def test_I1_the_final_reply_moves_it_and_the_tool_step_does_not(alice: Any) -> None:
    thread = await sync_to_async(_thread)(alice)
    await _post(thread, "hello")  # the post moves it (as before)
    posted_at = (await Thread.objects.aget(pk=thread.pk)).last_message_at
    assert posted_at is not None and posted_at > LONG_AGO
    await sync_to_async(_age)(thread)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(REGISTRY_ALL, channel)
    await _activity_frames(channel)

    async with Statements() as statements:
        await asyncio.wait_for(run_session_job(await _active_session(thread)), 30)

    assert SEEN_MID_TURN == [LONG_AGO]  # the tool-calling step landed: not moved
    stored = await Thread.objects.aget(pk=thread.pk)
    assert stored.last_message_at is not None and stored.last_message_at > LONG_AGO
    # At the edges: the session's last thread_activity frame and the thread's JSON.
    frames = await _activity_frames(channel)
    assert frames[-1]["executing"] is False
    assert frames[-1]["last_message_at"] == wire.seconds(stored.last_message_at)
    listed = await sync_to_async(lambda: client_for(alice).get("/api/threads").json())()
    [item] = [t for t in listed["threads"] if t["id"] == str(thread.pk)]
    assert item["last_message_at"] == wire.seconds(stored.last_message_at)
    # No statement of its own on the worker's database thread (the commit runs on the loop's
    # connection; which statement sets it is the next test's).
    assert not [sql for sql in statements.sql if "last_message_at =" in sql], statements.sql


def _row(**fields: Any) -> Message:
    return Message(id=new_id(), role="assistant", created_at=10**15, **fields)


CALL = make_tool_call("c1", "peek_unread", "{}")


@pytest.mark.parametrize(
    ("row", "moves"),
    [
        (_row(content="An answer."), True),
        (_row(content="", attachments=[{"id": "f1", "path": "/a.png"}]), True),
        (_row(content="The model failed half way", status="failed"), True),
        (_row(content="", status="failed"), False),
        (_row(content="Let me look.", tool_calls=[CALL]), False),  # a mid-turn tool step
        (_row(content="Quietly.", silent=True), False),
        (_row(content="A sub-prompt's answer.", depth=1), False),
        (_row(content="", status="pending"), False),  # a step just opened
        (_row(content="   "), False),
        (Message(id=new_id(), role="user", content="hi", created_at=10**15), False),
    ],
    ids=[
        "answer",
        "attachment-only",
        "failed-with-text",
        "failed-empty",
        "tool-step",
        "silent",
        "sub-prompt",
        "pending",
        "blank",
        "engine-user-row",
    ],
)
def test_I1_which_rows_move_it_through_the_engines_commit(
    alice: Any, row: Message, moves: bool
) -> None:
    thread = _thread(alice)
    _age(thread)

    commit = Commit(messages=[row])
    query, _ = fast_commit.statement(str(thread.pk), commit)
    assert ("last_message_at = now()" in query) is moves  # inside the one statement
    commit_rows(str(thread.pk), commit)

    stored = Thread.objects.get(pk=thread.pk).last_message_at
    assert (stored != LONG_AGO) is moves, stored
