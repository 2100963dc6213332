"""The reads every post makes are fixed statements, not ORM querysets (issue #21): compiling
the ORM's versions cost the web process more than PostgreSQL's work. Each test checks the
answer against the ORM's own and that no ``SELECT`` was compiled for it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models.sql.compiler import (
    SQLAggregateCompiler,
    SQLCompiler,
    SQLDeleteCompiler,
    SQLInsertCompiler,
    SQLUpdateCompiler,
)
from django.test.utils import CaptureQueriesContext

from agents_app.models import Agent, SpendBudget, Thread, ThreadSession, UsageLimit
from agents_app.models.agents import MidRunMessages
from agents_app.services.access import limits
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.sessions import lifecycle as sessions
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


def test_a_post_reads_its_thread_sessions_and_budgets_in_the_statement_that_locks_it(
    thread_of: Any, alice: Any, settings: Any, selects: list[str]
) -> None:
    """``lock_for_post`` answers what ``lock_thread``, ``session_state`` and
    ``limits.budgets`` answer, in one statement, for every mix of open sessions and of
    budget rows (a missing row is the setting; a row with no limit lifts it)."""
    settings.STUDIO_BUDGET_USER_MONTHLY_USD = Decimal("7.00")
    settings.STUDIO_BUDGET_AGENT_MONTHLY_USD = None
    thread = thread_of(alice)
    Thread.objects.filter(pk=thread.pk).update(execution_state={"k": [1]}, stopped=True)

    def both() -> sessions.PostRead:
        selects.clear()
        with CaptureQueriesContext(connection) as statements, transaction.atomic():
            read = sessions.lock_for_post(thread.pk)
        assert len(statements.captured_queries) - _savepoints(statements) == 1
        assert selects == []
        expected = Thread.objects.get(pk=thread.pk)
        fields = [f.attname for f in Thread._meta.concrete_fields]
        assert [getattr(read.thread, f) for f in fields] == [getattr(expected, f) for f in fields]
        assert read.state == sessions.session_state(expected)
        assert read.budgets == limits.budgets(expected.owner_id, expected.agent_id)
        assert read.mid_run == expected.agent.mid_run_messages
        return read

    read = both()
    assert (read.state, read.budgets) == (sessions.SessionState(False, False), (Decimal("7"), None))
    ThreadSession.objects.create(thread=thread, status=ThreadSession.Status.PARKED)
    SpendBudget.objects.create(user=alice, monthly_limit_usd=None)  # lifts the setting
    SpendBudget.objects.create(agent=thread.agent, monthly_limit_usd=Decimal("2.50"))
    read = both()
    assert (read.state, read.budgets) == (
        sessions.SessionState(False, True),
        (None, Decimal("2.5")),
    )
    ThreadSession.objects.create(thread=thread, status=ThreadSession.Status.RUNNING)
    SpendBudget.objects.filter(user=alice).update(monthly_limit_usd=Decimal("1.25"))
    Agent.objects.filter(pk=thread.agent_id).update(mid_run_messages=MidRunMessages.REJECT)
    read = both()
    assert read.state == sessions.SessionState(True, True)
    assert read.budgets == (Decimal("1.25"), Decimal("2.5"))
    with pytest.raises(Thread.DoesNotExist):
        sessions.lock_for_post("00000000-0000-0000-0000-000000000000")


def _savepoints(statements: CaptureQueriesContext) -> int:
    return sum("SAVEPOINT" in q["sql"] for q in statements.captured_queries)


def test_a_post_to_an_idle_thread_runs_eight_statements_and_a_busy_one_seven(
    thread_of: Any, alice: Any, as_: Any, settings: Any
) -> None:
    """The statements of a whole post request, as the web process runs them (issue #39):
    each one is a round trip and a cursor of the web process's time, so a new one fails
    here with the list of what runs."""
    settings.STUDIO_EXECUTOR = "none"
    client = as_(alice)
    warm = thread_of(alice)
    assert client.post_json(f"/api/threads/{warm.pk}/messages", {"content": "w"}).status_code == 202

    def post(thread: Thread) -> list[str]:
        with CaptureQueriesContext(connection) as statements:
            answer = client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "hi"})
        assert answer.status_code == 202, answer.content
        sql = [q["sql"] for q in statements.captured_queries if "SAVEPOINT" not in q["sql"]]
        return [" ".join(s.split()[:4])[:60] for s in sql]

    idle = thread_of(alice)
    statements = post(idle)
    assert len(statements) == 8, statements  # 10 before issue #39's lock_for_post
    # The key, the usage limits, the access check, the secrets; the lock with the open
    # sessions and the budgets; the queued message, the thread's stamp, the session.
    assert [s.split()[0] for s in statements] == ["SELECT"] * 5 + ["INSERT", "UPDATE", "INSERT"]
    busy = post(idle)  # its session is still queued: the message waits for it
    assert len(busy) == 7, busy  # 8 before: the agent's mid-run policy was a query of its own
    assert [s.split()[0] for s in busy] == ["SELECT"] * 5 + ["INSERT", "UPDATE"]


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
    from agents_app.services.threads.messages import message_post

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
    from agents_app.services.threads.messages import message_post

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


def test_a_thread_creation_runs_eight_statements(
    thread_of: Any, alice: Any, as_: Any, settings: Any
) -> None:
    """A new chat creates its thread before its first post, so its statements are part of
    the wait before that reply's first token (issue #39). The agent was read twice by name
    (the API's offer check, then the creation's) and, for agents without an
    ``after_thread_created`` hook (most), the thread's secrets were read to build a state no
    hook used: 19 statements before, 17 then; 15 since the offer check asks the cheap question
    first (issue #58: a published agent in the person's audience needs no permission read,
    two statements); 9 since the engine reads the agent's definitions as its first session
    will, from the process's cache of the newest versions while the definitions' stamp says
    nothing changed (the agent's row, env values and audience groups, the prompt, its parts,
    tools and env values: seven statements, now the stamp); 8 since the insert points to the
    agent's row the offer check read instead of reading it again. A new one fails here with
    the list."""
    settings.STUDIO_EXECUTOR = "none"
    client = as_(alice)
    thread_of(alice)  # defines the agent
    assert client.post_json("/api/threads", {"agent_id": "helper"}).status_code == 200  # warm

    with CaptureQueriesContext(connection) as statements:
        answer = client.post_json("/api/threads", {"agent_id": "helper"})
    assert answer.status_code == 200, answer.content
    sql = [q["sql"] for q in statements.captured_queries if "SAVEPOINT" not in q["sql"]]
    listed = [" ".join(s.split()[:4])[:70] for s in sql]
    assert len(sql) == 8, listed
    assert not any("auth_permission" in s for s in sql), listed
    agent_reads = [
        s
        for s in sql
        if s.startswith('SELECT "agents_app_agent"') or " FROM agents_app_agent a WHERE" in s
    ]
    # The offer check's, which the insert reuses; the definition is the cache's.
    assert len(agent_reads) == 1, listed
    assert not any(s.startswith('SELECT "agents_app_prompt') for s in sql), listed
    # No secrets read: no hook gets a state whose frames would be redacted with them.
    assert not any(s.startswith("SELECT '', '', ''") for s in sql), listed
