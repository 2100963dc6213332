"""A warm conversation start makes PostgreSQL plan no statement (issue #58).

PostgreSQL plans every statement it is sent unprepared; with Django's client-side binding
that was most of the database's CPU per start (5.4 of 7.3 ms at 200 starts at once,
pg_stat_statements over ``bench/service_bench.py``). The start path's statements run on
``raw_sql.prepared_cursor``, which binds on the server, so psycopg prepares each once a
connection has run it ``DB_PREPARE_THRESHOLD`` times and the server keeps its plan. The
counts are the server's own (``pg_prepared_statements``: each prepared statement's custom
and generic plans on this connection), so they do not depend on timing: a start statement
that runs on a client-binding cursor again, or whose text changes per start, fails here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from agents_app.db.raw_sql import prepared_cursor
from agents_app.models import Thread
from agents_app.orchestration import runner
from agents_app.orchestration.runner import run_session_job, supervisor
from studio.db_options import prepared_options
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.api.test_api_sessions import _active_session
from tests.agents_app.test_start_cost import _post

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"
)

# Statements the planner sees; BEGIN, SAVEPOINT and the like are not planned.
PLANNED = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")


def _plans(wrapper: Any = connection) -> tuple[int, int]:
    """Custom and generic plans made so far for this connection's prepared statements (read
    unprepared, so the reading is not one of them)."""
    wrapper.ensure_connection()
    raw = wrapper.connection
    assert raw is not None
    row = raw.execute(
        "SELECT coalesce(sum(custom_plans), 0)::int, coalesce(sum(generic_plans), 0)::int"
        " FROM pg_prepared_statements",
        prepare=False,
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def _planned(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if q["sql"].lstrip().startswith(PLANNED)]


def _listed(statements: list[str]) -> str:
    return "the statements:\n" + "\n".join(s[:140] for s in statements)


@pytest.mark.django_db
def test_a_warm_post_makes_postgresql_plan_nothing(alice: Any, as_: Any, thread_of: Any) -> None:
    client = as_(alice)
    # psycopg prepares a statement at its sixth run on a connection; the server plans a
    # prepared statement for its first five runs, then keeps a generic plan.
    for _ in range(11):
        _post(client, thread_of(alice), "warm")
    thread = thread_of(alice)
    custom, generic = _plans()
    with CaptureQueriesContext(connection) as captured:
        _post(client, thread)
    custom_after, generic_after = _plans()
    statements = _planned(captured)
    assert len(statements) >= 5, statements
    assert custom_after == custom, "planned again: " + _listed(statements)
    # Each statement ran prepared with the kept plan: none was sent unprepared.
    assert generic_after - generic == len(statements), _listed(statements)


@pytest.mark.django_db
def test_the_connection_prepares_after_five_runs_and_the_orm_binds_on_the_client() -> None:
    from django.db.backends.postgresql.base import ServerBindingCursor

    params = connection.get_connection_params()
    assert params["prepare_threshold"] == 5
    # Only the start path's cursors bind on the server: the ORM's SQL is what it was.
    assert params["cursor_factory"].__name__ == "Cursor"
    with prepared_cursor() as cursor:
        assert isinstance(cursor.cursor, ServerBindingCursor)


def test_db_server_prepare_false_prepares_nothing() -> None:
    """Behind a pooler that cannot carry prepared statements (``DB_SERVER_PREPARE=false``)
    the connection gets no threshold: psycopg then prepares nothing."""
    assert prepared_options(server_prepare=False) == {}
    assert prepared_options(server_prepare=True, threshold=0) == {"prepare_threshold": 0}
    with pytest.raises(ValueError, match="DB_PREPARE_THRESHOLD must be 0 or more"):
        prepared_options(server_prepare=True, threshold=-1)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_a_warm_session_start_makes_postgresql_plan_nothing(
    alice: Any, as_: Any, settings: Any, monkeypatch: Any
) -> None:
    """The worker's side: ``run_session_job`` of a one-step session, claim to release, on
    the database thread's connection (the engine's commit has its own, prepared by name)."""
    settings.STUDIO_STOP_POLL_MS = 600_000  # the supervisor's poll stays out of the window
    try:
        await sync_to_async(define_agent)("helper", [{"content": "hi there"}])
        client = await sync_to_async(as_)(alice)

        async def posted() -> str:
            def make() -> Thread:
                answer = client.post_json("/api/threads", {"agent_id": "helper"})
                thread = Thread.objects.get(pk=answer.json()["threadId"])
                _post(client, thread)
                return thread

            session_id = await _active_session(await sync_to_async(make)())
            assert session_id is not None
            return session_id

        # The job's database thread runs in the job's own context, whose connection is not
        # necessarily the test's: take the one its claim ran on.
        used: list[Any] = []
        real_claim = runner._claim

        def claim(session_id: str, owner: str) -> Any:
            used.append(connections["default"])
            return real_claim(session_id, owner)

        monkeypatch.setattr(runner, "_claim", claim)
        for _ in range(11):  # as for a post: prepared, then five planned runs
            await asyncio.wait_for(run_session_job(await posted()), 30)
        session_id = await posted()
        job_connection = used[-1]
        captured = CaptureQueriesContext(job_connection)
        custom, generic = await sync_to_async(_plans)(job_connection)
        await sync_to_async(captured.__enter__)()
        try:
            await asyncio.wait_for(run_session_job(session_id), 30)
        finally:
            await sync_to_async(captured.__exit__)(None, None, None)
        assert used[-1] is job_connection
        custom_after, generic_after = await sync_to_async(_plans)(job_connection)
        statements = _planned(captured)
        assert len(statements) >= 4, statements
        assert custom_after == custom, "planned again: " + _listed(statements)
        assert generic_after - generic == len(statements), _listed(statements)
    finally:
        task = supervisor()._task
        if task is not None:
            task.cancel()


@pytest.mark.django_db
def test_a_warm_thread_creation_makes_postgresql_plan_nothing(
    alice: Any, as_: Any, settings: Any
) -> None:
    """A new chat creates its thread before its first post, and the bench's 200 starts
    create 200 threads: the offer check's agent, the insert, the created thread's read, the
    immediate-tools check and the registry's row were ORM statements PostgreSQL planned at
    every run (266 of its 899 ms over 200 creations, pg_stat_statements). They are fixed
    statements on ``prepared_cursor`` now (``test_start_cost.py`` holds their Python)."""
    settings.STUDIO_EXECUTOR = "none"
    define_agent("helper", [{"content": "hi"}])
    client = as_(alice)
    for _ in range(11):
        assert client.post_json("/api/threads", {"agent_id": "helper"}).status_code == 200
    custom, generic = _plans()
    with CaptureQueriesContext(connection) as captured:
        answer = client.post_json("/api/threads", {"agent_id": "helper"})
    assert answer.status_code == 200, answer.content
    custom_after, generic_after = _plans()
    statements = _planned(captured)
    assert len(statements) >= 8, statements
    assert custom_after == custom, "planned again: " + _listed(statements)
    assert generic_after - generic == len(statements), _listed(statements)
