"""The kept per-thread message count (``agents_app.db.message_counts``): the triggers keep it
equal to a fresh count through every kind of write, the page's ``total`` reads it, and
``migrate`` reinstalls missing triggers with a recount, on PostgreSQL and on SQLite.

Every other test that touches the database is checked too: ``tests/conftest.py`` compares
the kept counts with fresh ones after each such test (``message_counts.differences``)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from agents_app import selectors
from agents_app.db import message_counts, page_reads
from agents_app.models import Message, Thread, ThreadMessageCount
from agents_app.services.threads.batched_delete import Batches, delete_rows
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.process.manage_support import manage as run_manage
from tests.integration.stack import sqlite_database

pytestmark = pytest.mark.django_db(transaction=True)


def _kept(thread: Thread) -> int | None:
    row = ThreadMessageCount.objects.filter(thread=thread).first()
    return row.top_level if row else None


def _message(thread: Thread, at: int, **fields: Any) -> Message:
    return Message.objects.create(
        thread=thread, role="user", content=f"m{at}", created_at=at, **fields
    )


def test_the_triggers_are_installed_by_migrate() -> None:
    assert message_counts.install() is False  # already there: the test database was migrated


def test_inserts_updates_moves_and_deletes_keep_the_count(thread_of: Any, alice: Any) -> None:
    one, two = thread_of(alice), thread_of(alice)
    first = _message(one, 1)
    _message(one, 2, silent=True)
    _message(one, 3, depth=1, parent=first)
    Message.objects.bulk_create(
        [Message(thread=one, role="user", created_at=10 + i) for i in range(5)]
    )
    assert _kept(one) == 6 and message_counts.differences() == []

    Message.objects.filter(thread=one, created_at=10).update(silent=True)  # out of the count
    Message.objects.filter(thread=one, created_at=2).update(silent=False)  # into it
    Message.objects.filter(thread=one, created_at=11).update(content="edited")  # no change
    assert _kept(one) == 6
    Message.objects.filter(thread=one, created_at=12).update(thread=two)  # moved
    assert (_kept(one), _kept(two)) == (5, 1)

    Message.objects.filter(created_at__in=[13, 14]).delete()  # one statement
    first.delete()  # and its depth-1 child, through Django's cascade
    assert (_kept(one), _kept(two)) == (2, 1) and message_counts.differences() == []


def test_a_failed_write_leaves_the_count_as_it_was(thread_of: Any, alice: Any) -> None:
    thread = thread_of(alice)
    _message(thread, 1)
    with pytest.raises(RuntimeError), transaction.atomic():
        _message(thread, 2)
        _message(thread, 3)
        raise RuntimeError("rolled back")
    assert _kept(thread) == 1 and message_counts.differences() == []


def test_deleting_threads_with_their_messages_leaves_no_count_behind(
    thread_of: Any, alice: Any
) -> None:
    doomed, batched, kept = thread_of(alice), thread_of(alice), thread_of(alice)
    for thread in (doomed, batched, kept):
        for at in range(3):
            _message(thread, at)
    doomed.delete()  # Django's collector: the count row and the messages, in either order
    delete_rows(Batches(size=100), Thread, [batched.pk])  # retention's batched raw deletes
    assert set(ThreadMessageCount.objects.values_list("thread_id", flat=True)) == {kept.pk}
    assert message_counts.differences() == []


def test_the_page_total_is_the_kept_count(thread_of: Any, alice: Any) -> None:
    thread = thread_of(alice)
    for at in range(4):
        _message(thread, at)
    _message(thread, 9, silent=True)
    # A count set by hand shows that the default page reads it, not a fresh count...
    ThreadMessageCount.objects.filter(thread=thread).update(top_level=40)
    _, total, has_more = selectors.message_page(thread, selectors.MessageQuery(limit=2))
    assert (total, has_more) == (40, True)
    # ...while other scopes still count.
    assert page_reads.stored_count(thread.pk, depth=0, include_silent=True) == 5
    assert message_counts.differences() == [(str(thread.pk), 4, 40)]
    ThreadMessageCount.objects.filter(thread=thread).update(top_level=4)


def test_a_missing_trigger_is_reinstalled_with_a_recount(thread_of: Any, alice: Any) -> None:
    thread = thread_of(alice)
    _message(thread, 1)
    ThreadMessageCount.objects.filter(thread=thread).update(top_level=40)
    drop = f"DROP TRIGGER {message_counts.TRIGGERS[1]}"
    with connection.cursor() as cursor:
        cursor.execute(
            drop + (f" ON {Message._meta.db_table}" if connection.vendor == "postgresql" else "")
        )
    assert message_counts.install() is True
    assert _kept(thread) == 1 and message_counts.differences() == []
    assert message_counts.install() is False


def test_a_thread_without_a_count_row_is_counted(thread_of: Any, alice: Any) -> None:
    thread = thread_of(alice)
    _message(thread, 1)
    _message(thread, 2)
    ThreadMessageCount.objects.filter(thread=thread).delete()
    assert page_reads.stored_count(thread.pk, depth=0, include_silent=False) == 2
    assert message_counts.differences() == [(str(thread.pk), 2, None)]
    ThreadMessageCount.objects.create(thread=thread, top_level=2)


_SQLITE_SCRIPT = """
from agents_app.db import message_counts
from agents_app.models import Message, Thread, ThreadMessageCount
from tests.agents_app.services.retention_support import make_agent, make_threads
agent = make_agent()
one, two = make_threads(agent, 2, idle_days=0)
rows = [Message.objects.create(thread=one, role="user", created_at=i) for i in range(4)]
Message.objects.create(thread=one, role="user", created_at=9, silent=True)
Message.objects.create(thread=one, role="user", created_at=8, depth=1, parent=rows[0])
Message.objects.bulk_create([Message(thread=two, role="user", created_at=i) for i in range(3)])
Message.objects.filter(thread=one, created_at=1).update(silent=True)
Message.objects.filter(thread=one, created_at=9).update(silent=False)
Message.objects.filter(thread=one, created_at=2).update(thread=two, created_at=7)
rows[3].delete()
two.delete()
assert message_counts.differences() == [], message_counts.differences()
print("kept", list(ThreadMessageCount.objects.values_list("top_level", flat=True)))
"""


def test_the_sqlite_triggers_keep_the_count_and_survive_a_table_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "counts.sqlite3"

    def manage(*args: str) -> str:
        done = run_manage(*args, database_url=f"sqlite:///{db}")
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    # Migrated: a copy of the SQLite template ``manage.py migrate`` built once (kept between
    # runs, shared with the integration tests); migrating from zero here took over a minute.
    sqlite_database(db, dict(os.environ), seeded=False)
    out = manage("shell", "-c", _SQLITE_SCRIPT)
    assert "kept [2]" in out  # thread one: created_at 0 and 9
    # Django alters a SQLite table by rebuilding it, which drops its triggers: the next
    # migrate puts them back.
    con = sqlite3.connect(db)
    con.execute(f"DROP TRIGGER {message_counts.TRIGGERS[0]}")
    con.execute("UPDATE agents_app_threadmessagecount SET top_level = 40")
    con.commit()
    manage("migrate", "--noinput")
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    kept = [r[0] for r in con.execute("SELECT top_level FROM agents_app_threadmessagecount")]
    con.close()
    assert set(message_counts.TRIGGERS) <= names and kept == [2]
