"""Database errors under a real Celery worker: no thread is left stuck.

One worker runs with every fault point of the claim path armed (``agents_app/base/faults.py``:
each terminates the real backend of the connection in use, once); another test kills the
worker's database connections from outside while a request is in flight. Either way the
session is answered, later messages too, and stop and continue work.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from tests.integration.stack import PG_ADMIN_URL, Stack, wait_until
from tests.integration.test_live_sessions import (
    Watch,
    assistant_pending,
    kind,
    messages,
    new_thread,
    post,
)

pytestmark = pytest.mark.integration

# ``announce`` is not among them: the end's announcement is read by the release itself, and
# the point is only a read of its own when a release could not read it (not on this path).
EVERY_POINT = "claim,plan,engine_commit,release,heartbeat,stop_cleanup"


def released(stack: Stack, thread_id: str) -> bool:
    rows = stack.sql(
        "select count(*) from agents_app_threadsession"
        " where status in ('queued', 'running') and thread_id = %s",
        uuid.UUID(thread_id),
    )
    return rows == [(0,)]


def stop_then_continue(stack: Stack, thread_id: str) -> None:
    """Stop a request in flight, park a message, continue: the parked message is answered."""
    alice = stack.client("alice")
    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        post(stack, thread_id, "wake up")
        stream.until(
            lambda f: kind(f) == ("message_data", "assistant", "pending"), "the request", 60
        )
        post(stack, thread_id, "parked until continue")
        assert alice.post(f"/api/threads/{thread_id}/stop").status_code == 200
        stream.until(
            lambda f: kind(f) == ("message_data", "system", "completed"), "the stop message", 60
        )
    wait_until(lambda: released(stack, thread_id), "the stopped session to be released")
    assert messages(stack, thread_id)[-3:] == [
        ("assistant", "failed", None),
        ("system", "completed", "Execution stopped by user"),
        ("user", "pending", "parked until continue"),
    ]
    assert alice.post(f"/api/threads/{thread_id}/continue", json={"side": "a"}).status_code == 202
    wait_until(
        lambda: (
            messages(stack, thread_id)[-2:]
            == [
                ("user", "completed", "parked until continue"),
                ("assistant", "completed", "finally awake"),
            ]
        ),
        "continue to answer the parked message",
        timeout=60,
    )


def test_a_real_worker_answers_through_a_database_error_at_every_claim_point(
    stack: Stack, worker: Any
) -> None:
    process = worker("faulty", beat=True, env={"STUDIO_FAULT_POINTS": EVERY_POINT})
    thread_id = new_thread(stack, "greeter")
    post(stack, thread_id, "Hi there")
    wait_until(
        lambda: (
            messages(stack, thread_id)
            == [
                ("user", "completed", "Hi there"),
                ("assistant", "completed", "Hello Alice! How can I help you today?"),
            ]
        ),
        "the answer despite the faults",
        timeout=90,
    )
    wait_until(lambda: released(stack, thread_id), "the session to be released")
    [(status, error)] = stack.sql(
        "select status, error from agents_app_threadsession where thread_id = %s",
        uuid.UUID(thread_id),
    )
    assert (status, error) == ("completed", "")
    stop_then_continue(stack, new_thread(stack, "sleeper"))
    log = process.log.read_text(errors="replace")
    for point in EVERY_POINT.split(","):
        assert f"fault point {point}: terminating database backend" in log, stack.tails()
    # Handed back after the faults inside a claimed session: plan, engine_commit and
    # stop_cleanup (a claim's fault is retried before there is a claim; the release comes
    # after the session ended; the heartbeat's is the supervisor's).
    assert log.count("handing the claim back") >= 3, stack.tails()
    assert "crashed" not in log, stack.tails()


def test_a_real_worker_recovers_when_its_database_connections_are_killed_mid_request(
    stack: Stack, worker: Any
) -> None:
    process = worker("victim", beat=True)
    thread_id = new_thread(stack, "sleeper")
    post(stack, thread_id, "first")
    wait_until(lambda: assistant_pending(stack, thread_id), "the request to be in flight")
    killed = stack.sql(
        "select pg_terminate_backend(pid) from pg_stat_activity"
        " where datname = current_database() and pid <> pg_backend_pid()"
    )
    assert killed, "the worker held no database connection to kill"
    wait_until(
        lambda: (
            messages(stack, thread_id)
            == [("user", "completed", "first"), ("assistant", "completed", "finally awake")]
        ),
        "the interrupted session to be answered",
        timeout=90,
    )
    post(stack, thread_id, "second")
    wait_until(
        lambda: (
            messages(stack, thread_id)[2:]
            == [("user", "completed", "second"), ("assistant", "completed", "still here")]
        ),
        "the next message to be answered",
        timeout=60,
    )
    wait_until(lambda: released(stack, thread_id), "every session to be released")
    assert process.popen.poll() is None
    assert "crashed" not in process.log.read_text(errors="replace"), stack.tails()


def test_a_real_worker_recovers_after_too_many_connections_outlasts_its_retries(
    stack: Stack, worker: Any
) -> None:
    """The reported outage: PostgreSQL refuses the worker's connections ("too many
    connections") for longer than the worker retries; afterwards the sweep resumes."""
    role = f"it_limited_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
    with psycopg.connect(stack.dsn) as db:
        db.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        db.execute(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}"')
    limited_url = stack.database_url.replace("//root@", f"//{role}@", 1)
    assert limited_url != stack.database_url
    process = worker("limited", beat=True, env={"DATABASE_URL": limited_url})
    try:
        thread_id = new_thread(stack, "sleeper")
        post(stack, thread_id, "first")
        wait_until(lambda: assistant_pending(stack, thread_id), "the request to be in flight")
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT 0')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                [role],
            )
        wait_until(
            lambda: "giving up" in process.log.read_text(errors="replace"),
            "the worker to run out of retries",
            timeout=90,
        )
        assert "too many connections" in process.log.read_text(errors="replace")
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT -1')
        wait_until(
            lambda: (
                messages(stack, thread_id)
                == [("user", "completed", "first"), ("assistant", "completed", "finally awake")]
            ),
            "the sweep to resume the session",
            timeout=90,
        )
        post(stack, thread_id, "second")
        wait_until(
            lambda: (
                messages(stack, thread_id)[2:]
                == [("user", "completed", "second"), ("assistant", "completed", "still here")]
            ),
            "the next message to be answered",
            timeout=60,
        )
        wait_until(lambda: released(stack, thread_id), "every session to be released")
        assert process.popen.poll() is None
        assert "crashed" not in process.log.read_text(errors="replace"), stack.tails()
    finally:
        process.stop()
        with psycopg.connect(stack.dsn) as db:
            db.execute(f'DROP OWNED BY "{role}"')
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')
