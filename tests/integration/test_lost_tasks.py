"""A session's task that a worker received but never claimed, when that worker is killed.

The broker keeps no copy of a delivered task (studio/settings.py, ack emulation off), so the
task dies with the worker: nobody holds the session (it is still queued, no heartbeat to go
stale), and only the sweep's lost-task limit (``STUDIO_SESSION_REDISPATCH_SECONDS``) dispatches it
again. This is what made ``test_evals_live`` time out on a loaded machine (its 120 s wait was
the production limit); here the window is held open on purpose, with a row lock on the
session that the doomed worker's claim waits for.

Real processes: Daphne, two Celery workers (one killed with ``kill -9``), PostgreSQL, Redis.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
import pytest

from tests.integration.stack import Stack, wait_until
from tests.integration.test_live_sessions import messages, new_thread, post

pytestmark = pytest.mark.integration

_BLOCKED_CLAIM = (
    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'"
    " AND query LIKE 'UPDATE agents_app_threadsession SET status%%'"
)


def test_a_task_a_killed_worker_received_but_never_claimed_is_dispatched_again(
    stack: Stack, worker: Any
) -> None:
    thread_id = new_thread(stack, "greeter")
    url = stack.dsn
    with psycopg.connect(url) as locker, psycopg.connect(url, autocommit=True) as admin:
        post(stack, thread_id, "Hi")  # no worker consumes the queue yet: the task waits
        [(session_id,)] = locker.execute(
            "SELECT id FROM agents_app_threadsession WHERE thread_id = %s FOR UPDATE",
            [uuid.UUID(thread_id)],
        ).fetchall()
        doomed = worker("lost-doomed")

        def claim_waiting() -> int | None:
            rows = admin.execute(_BLOCKED_CLAIM, [stack.db_name]).fetchall()
            return rows[0][0] if rows else None

        backend = wait_until(claim_waiting, "the doomed worker's claim to wait", timeout=60)
        doomed.kill_hard()
        # Its claim dies with it (PostgreSQL would otherwise run it once the lock is gone).
        admin.execute("SELECT pg_terminate_backend(%s)", [backend])
        wait_until(
            lambda: (
                not admin.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s", [backend]
                ).fetchall()
            ),
            "the claim's backend to end",
        )
        locker.rollback()
    [(status,)] = stack.sql("SELECT status FROM agents_app_threadsession WHERE id = %s", session_id)
    assert status == "queued"  # received, never claimed: the task is lost with the worker
    rescuer = worker("lost-rescuer", beat=True, env={"STUDIO_SESSION_REDISPATCH_SECONDS": "3"})
    wait_until(
        lambda: (
            ("assistant", "completed", "Hello Alice! How can I help you today?")
            in messages(stack, thread_id)
        ),
        "the reply after the sweep dispatched the session again",
        timeout=60,
    )
    [(owner,)] = stack.sql("SELECT owner FROM agents_app_threadsession WHERE id = %s", session_id)
    assert f":{rescuer.popen.pid}:" in owner  # sessions.lifecycle.owner_id: host:pid:suffix
    # The sweep dispatched it (it returns how many sessions it sent again).
    log = rescuer.log.read_text(errors="replace")
    assert re.search(r"agents_app\.sweep_sessions\[[^]]+\] succeeded in [0-9.e-]+s: 1\b", log), log
