"""The reads every post makes are fixed statements, not ORM querysets (issue #21): compiling
the ORM's versions cost the web process more than PostgreSQL's work. Each test checks the
answer against the ORM's own and that no ``SELECT`` was compiled for it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction
from django.db.models.sql.compiler import (
    SQLAggregateCompiler,
    SQLCompiler,
    SQLDeleteCompiler,
    SQLInsertCompiler,
    SQLUpdateCompiler,
)

from agents_app.models import Thread, ThreadSession, UsageLimit
from agents_app.services import limits, sessions
from agents_app.services.api_keys import api_key_create
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


WRITES = (SQLInsertCompiler, SQLUpdateCompiler, SQLDeleteCompiler, SQLAggregateCompiler)


@pytest.fixture
def selects(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The models of the ORM ``SELECT`` statements compiled while the test runs."""
    compiled: list[str] = []
    real = SQLCompiler.as_sql

    def counting(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(self, WRITES):  # the backend's own SELECT compiler included
            compiled.append(self.query.model.__name__ if self.query.model else "?")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    yield compiled


def _compiled(monkeypatch: pytest.MonkeyPatch, compiler: type[SQLCompiler]) -> list[str]:
    """The models of the statements ``compiler`` compiles from now on in the test."""
    models: list[str] = []
    real = compiler.as_sql

    def counting(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
        models.append(self.query.model.__name__ if self.query.model else "?")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(compiler, "as_sql", counting)
    return models


def test_lock_thread_reads_the_whole_row_with_a_fixed_statement(
    thread_of: Any, alice: Any, selects: list[str]
) -> None:
    thread = thread_of(alice)
    Thread.objects.filter(pk=thread.pk).update(execution_state={"k": [1, "two"]}, stopped=True)
    expected = Thread.objects.get(pk=thread.pk)
    selects.clear()
    locked = sessions.lock_thread(thread.pk)
    assert selects == []
    fields = [f.attname for f in Thread._meta.concrete_fields]
    assert [getattr(locked, f) for f in fields] == [getattr(expected, f) for f in fields]
    assert locked.execution_state == {"k": [1, "two"]} and locked.stopped is True
    locked.save(update_fields=["last_message_preview"])  # a full instance: it writes back
    with pytest.raises(Thread.DoesNotExist):
        sessions.lock_thread("00000000-0000-0000-0000-000000000000")


def test_session_state_reads_the_open_statuses_with_a_fixed_statement(
    thread_of: Any, alice: Any, selects: list[str]
) -> None:
    thread = thread_of(alice)
    selects.clear()
    assert sessions.session_state(thread) == sessions.SessionState(active=False, parked=False)
    ThreadSession.objects.create(thread=thread, status=ThreadSession.Status.PARKED)
    ThreadSession.objects.create(thread=thread, status=ThreadSession.Status.COMPLETED)
    selects.clear()
    assert sessions.session_state(thread) == sessions.SessionState(active=False, parked=True)
    ThreadSession.objects.create(thread=thread, status=ThreadSession.Status.QUEUED)
    selects.clear()
    assert sessions.session_state(thread) == sessions.SessionState(active=True, parked=True)
    assert selects == []


def test_the_usage_limits_of_a_request_are_read_with_a_fixed_statement(
    settings: Any, alice: Any, bob: Any, selects: list[str]
) -> None:
    settings.STUDIO_RATE_LIMITS = {"message_post": (10, 60)}
    settings.STUDIO_RATE_LIMITS_PER_KEY = {"message_post": (5, 60)}
    key, _ = api_key_create(user=alice, name="k")
    other, _ = api_key_create(user=alice, name="other")
    UsageLimit.objects.create(user=alice, action="message_post", limit=3, period=3600)
    UsageLimit.objects.create(user=alice, api_key=key, action="message_post", limit=None)
    UsageLimit.objects.create(user=alice, api_key=other, action="message_post", limit=1)
    UsageLimit.objects.create(user=bob, action="message_post", limit=7)
    selects.clear()

    def rates(**kwargs: Any) -> list[tuple[str, tuple[int, int]]]:
        buckets = limits.action_buckets("message_post", **kwargs)
        return [(b.name, b.rate) for b in buckets]

    # The user's row replaces the setting; the key's empty limit lifts the per-key one.
    assert rates(user=alice, api_key_id=key.pk) == [(f"message_post:user:{alice.pk}", (3, 3600))]
    assert rates(user=alice, api_key_id=other.pk) == [
        (f"message_post:user:{alice.pk}", (3, 3600)),
        (f"message_post:key:{other.pk}", (1, 60)),
    ]
    assert rates(user=alice) == [(f"message_post:user:{alice.pk}", (3, 3600))]
    assert rates(user=bob) == [(f"message_post:user:{bob.pk}", (7, 60))]
    assert selects == []


def test_a_post_stamps_its_thread_with_a_fixed_statement(
    thread_of: Any, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents_app.services.messages import message_post

    updates = _compiled(monkeypatch, SQLUpdateCompiler)
    thread = thread_of(alice)
    before = Thread.objects.get(pk=thread.pk)
    with transaction.atomic():
        message_post(thread=thread, role="user", content="  hello there  ")
    after = Thread.objects.get(pk=thread.pk)
    assert after.last_activity_at > before.last_activity_at
    assert after.last_message_at == after.last_activity_at
    assert after.last_message_preview == "hello there"
    with transaction.atomic():
        message_post(thread=thread, role="user", content="quietly", silent=True)
    silent = Thread.objects.get(pk=thread.pk)
    assert silent.last_activity_at > after.last_activity_at
    assert (silent.last_message_at, silent.last_message_preview) == (
        after.last_message_at,
        "hello there",
    )
    assert "Thread" not in updates


def _stored(model: Any, pk: Any) -> dict[str, Any]:
    row = model.objects.get(pk=pk)
    return {f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields}


def test_insert_row_writes_what_the_orm_writes(thread_of: Any, alice: Any) -> None:
    from agents_app.db.raw_sql import insert_row
    from agents_app.models import QueuedMessage

    thread = thread_of(alice)
    root = uuid.uuid4()
    values = {
        "thread": thread,
        "role": "assistant",
        "content": "ünïcode and 'quotes'",
        "attachments": [{"name": "a.txt", "size": 3, "nested": {"k": [1, None, True]}}],
        "silent": True,
        "metadata": {"resume": "yes", "n": 2**40},
    }
    ours, theirs = QueuedMessage(**values), QueuedMessage.objects.create(**values)
    insert_row(ours)
    assert not ours._state.adding
    mine, orms = _stored(QueuedMessage, ours.pk), _stored(QueuedMessage, theirs.pk)
    for key in ("id", "created_at"):
        mine.pop(key), orms.pop(key)
    assert mine == orms
    # A model with auto_now_add, defaults and nullable columns.
    # (One open session per thread: the twin is on a thread of its own.)
    session = ThreadSession(thread=thread, side="b", root_message_id=root)
    insert_row(session)
    other = thread_of(alice)
    twin = ThreadSession.objects.create(thread=other, side="b", root_message_id=root)
    mine, orms = _stored(ThreadSession, session.pk), _stored(ThreadSession, twin.pk)
    assert mine["created_at"] is not None and mine["created_at"] <= orms["created_at"]
    assert session.created_at == mine["created_at"]
    assert (mine["thread_id"], orms["thread_id"]) == (thread.pk, other.pk)
    for key in ("id", "created_at", "thread_id"):
        mine.pop(key), orms.pop(key)
    assert mine == orms
    with pytest.raises(TypeError):
        insert_row(UsageLimit(user=alice, action="message_post", limit=1, period=60))


def test_a_posts_inserts_are_fixed_statements(
    thread_of: Any, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents_app.models import QueuedMessage
    from agents_app.services.messages import message_post

    thread = thread_of(alice)
    inserts = _compiled(monkeypatch, SQLInsertCompiler)
    with transaction.atomic():
        message_post(thread=thread, role="user", content="hello")
    assert inserts == []
    (queued,) = QueuedMessage.objects.filter(thread=thread)
    assert (queued.role, queued.content, queued.silent) == ("user", "hello", False)
    (session,) = ThreadSession.objects.filter(thread=thread)
    assert session.status == ThreadSession.Status.QUEUED
    assert session.root_message_id == queued.pk and session.side == "a"
