"""The engine's commit on the event loop's own psycopg connection (``bridge/async_commit.py``).

It must store exactly what the commit through Django's connection stores, fence
claimed commits the same way, and recover from a connection that broke.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from asgiref.sync import sync_to_async

from agents_app.bridge import async_commit, fast_commit, store
from agents_app.bridge.store import DjangoStore
from agents_app.models import Message, ThreadSession
from runtime.core.messages import new_id
from runtime.store.protocol import Commit
from tests.agents_app.bridge.test_fast_commit import _commit, _stored, _stored_without_ids, _thread

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


async def _terminate_the_loops_connection() -> None:
    """The server ends the engine connection's backend (a restart, an admin, a timeout)."""
    pid = await async_commit.run("SELECT pg_backend_pid()", [])
    assert pid is not None

    def kill(backend: int) -> None:
        with psycopg.connect(**async_commit._params(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [backend])

    await sync_to_async(kill)(pid[0])


async def test_the_async_commit_stores_what_the_commit_through_django_stores() -> None:
    sync_thread, async_thread = await sync_to_async(_thread)(), await sync_to_async(_thread)()
    on_django, on_loop = _commit(sync_thread, 0), _commit(async_thread, 0)
    await sync_to_async(store.commit_rows)(sync_thread, on_django)
    result = await DjangoStore(async_commits=True).commit(async_thread, on_loop)
    assert (result.stopped, result.drained) == (True, [])

    def rows(commit: Commit) -> list[list[tuple[str, Any]]]:
        ids = ("thread", "parent", "retry_of", "message_id", "subagent", "root_message_id")
        out = []
        for row in _stored(commit):
            row.pop("progress", None)  # its ids differ; the rest of the row must not
            out.append(sorted((k, v) for k, v in row.items() if k not in ids))
        return out

    assert await sync_to_async(rows)(on_loop) == await sync_to_async(rows)(on_django)


async def test_the_async_commit_runs_prepared_on_the_loops_own_connection() -> None:
    thread_id = await sync_to_async(_thread)()
    engine_store = DjangoStore(async_commits=True)
    for n in range(3):
        await engine_store.commit(thread_id, _commit(thread_id, n))
    rows = await async_commit.run(
        "SELECT current_setting('application_name'), "
        "(SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s)",
        ["%jsonb_populate_recordset(NULL::agents_app_log%"],
    )
    assert rows == (async_commit.APPLICATION_NAME, 1)


async def test_without_server_prepare_the_async_commit_prepares_nothing(settings: Any) -> None:
    # DB_SERVER_PREPARE=false (a pooler without max_prepared_statements): the same rows,
    # and no statement prepared on the loop's connection.
    prepared_thread = await sync_to_async(_thread)()
    unprepared_thread = await sync_to_async(_thread)()
    prepared, unprepared = _commit(prepared_thread, 0), _commit(unprepared_thread, 0)
    engine_store = DjangoStore(async_commits=True)
    await engine_store.commit(prepared_thread, prepared)
    await async_commit.close()  # a new server session: nothing prepared on it yet
    settings.DB_SERVER_PREPARE = False
    await engine_store.commit(unprepared_thread, unprepared)
    await engine_store.commit(unprepared_thread, _commit(unprepared_thread, 1))
    count = await async_commit.run("SELECT count(*) FROM pg_prepared_statements", [])
    assert count == (0,)
    stored = sync_to_async(_stored_without_ids)
    assert await stored(unprepared) == await stored(prepared)


async def test_a_broken_connection_fails_one_commit_and_the_next_reconnects() -> None:
    thread_id = await sync_to_async(_thread)()
    engine_store = DjangoStore(async_commits=True)
    await engine_store.commit(thread_id, _commit(thread_id, 0))
    await _terminate_the_loops_connection()
    lost = _commit(thread_id, 1)
    with pytest.raises(psycopg.OperationalError):
        await engine_store.commit(thread_id, lost)
    kept = _commit(thread_id, 2)
    await engine_store.commit(thread_id, kept)
    stored = await sync_to_async(set)(
        Message.objects.filter(thread_id=thread_id).values_list("id", flat=True)
    )
    assert {str(i) for i in stored} >= {kept.messages[0].id}
    assert lost.messages[0].id not in {str(i) for i in stored}


async def test_a_fenced_commit_of_a_worker_that_is_not_the_owner_writes_nothing() -> None:
    thread_id = await sync_to_async(_thread)()
    session = await sync_to_async(ThreadSession.objects.create)(
        thread_id=thread_id, status="running", owner="worker-2"
    )
    commit = _commit(thread_id, 0)
    commit.progress = None
    fence = fast_commit.ClaimedRow(str(session.pk), owner="worker-1")
    with pytest.raises(fast_commit.NotOwner):
        await async_commit.commit_in_one_statement(thread_id, commit, fence)
    assert not await sync_to_async(Message.objects.filter(thread_id=thread_id).exists)()
    owner = fast_commit.ClaimedRow(str(session.pk), owner="worker-2")
    await async_commit.commit_in_one_statement(thread_id, commit, owner)
    assert await sync_to_async(Message.objects.filter(thread_id=thread_id).count)() == 1


async def test_an_unknown_thread_is_a_lookup_error_on_the_loop_too() -> None:
    await sync_to_async(_thread)()
    with pytest.raises(LookupError):
        await DjangoStore(async_commits=True).commit(new_id(), Commit())


async def test_values_orjson_refuses_are_stored_through_the_standard_library() -> None:
    thread_id = await sync_to_async(_thread)()
    commit = _commit(thread_id, 0)
    huge = 2**70  # orjson encodes 64-bit integers only
    commit.messages[0].metadata = {"big": huge, "text": "é \u2603"}
    await DjangoStore(async_commits=True).commit(thread_id, commit)
    row = await sync_to_async(Message.objects.get)(pk=commit.messages[0].id)
    assert row.metadata == {"big": huge, "text": "é \u2603"}
    assert async_commit._dumps({1: "x"}) == b'{"1":"x"}'  # keys as JSON has them: text


async def test_a_connection_that_died_while_idle_is_replaced_before_the_next_commit() -> None:
    thread_id = await sync_to_async(_thread)()
    engine_store = DjangoStore(async_commits=True)
    await engine_store.commit(thread_id, _commit(thread_id, 0))
    await _terminate_the_loops_connection()
    # The server went away while the worker had nothing to do (a restart, an idle timeout).
    async_commit._holder().used_at -= async_commit.HEALTH_CHECK_AFTER + 1
    after_idle = _commit(thread_id, 1)
    await engine_store.commit(thread_id, after_idle)  # no error: checked and reopened first
    assert await sync_to_async(Message.objects.filter(pk=after_idle.messages[0].id).exists)()
