"""A Redis restart during a session: the worker survives it and answers what comes after.

The stack runs against a redis-server of the test's own (a free port, no persistence), so
the test can ``kill -9`` it mid-session and start it again on the same port. Nobody touches
the worker in between. No timing assertions: every wait is a bounded poll.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.stack import RedisServer, Stack, wait_until
from tests.integration.test_live_sessions import (
    Watch,
    assistant_pending,
    kind,
    messages,
    new_thread,
    post,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def stack(tmp_path: Path, redis_server: RedisServer) -> Iterator[Stack]:
    """This module's own stack (not the session's): it talks to ``redis_server`` only."""
    stack = Stack(tmp_path, redis_base=redis_server.url).start()
    try:
        yield stack
    finally:
        stack.stop()


def test_a_worker_survives_a_redis_restart_during_a_session(
    stack: Stack, redis_server: RedisServer
) -> None:
    worker = stack.worker("w1", beat=True)
    log = worker.log

    # A session whose request is in flight (its task received, not yet acknowledged).
    interrupted = new_thread(stack, "sleeper")
    post(stack, interrupted, "first")
    wait_until(lambda: assistant_pending(stack, interrupted), "the request to be in flight")

    redis_server.kill_hard()
    wait_until(
        lambda: "Connection to broker lost" in log.read_text(errors="replace"),
        "the worker to notice the lost broker",
    )
    redis_server.start()  # same port, empty: every queued task is gone
    wait_until(
        lambda: log.read_text(errors="replace").count("Connected to redis://") >= 2,
        "the worker to reconnect",
        timeout=60,
    )
    assert worker.popen.poll() is None, stack.tails()

    # New work after the restart is answered, live frames included.
    fresh = new_thread(stack, "greeter")
    with Watch(stack, f"/api/threads/{fresh}/stream") as stream:
        post(stack, fresh, "hello again")
        stream.until(lambda f: f["type"] == "stopped", "the new session's stopped frame", 60)
    assert ("message_data", "assistant", "completed") in [kind(f) for f in stream.frames]
    assert messages(stack, fresh) == [
        ("user", "completed", "hello again"),
        ("assistant", "completed", "Hello Alice! How can I help you today?"),
    ]

    # The interrupted session finished (or was recovered), and its thread takes new messages.
    wait_until(
        lambda: (
            messages(stack, interrupted)
            == [("user", "completed", "first"), ("assistant", "completed", "finally awake")]
        ),
        "the interrupted session to finish",
        timeout=60,
    )
    post(stack, interrupted, "second")
    wait_until(
        lambda: (
            messages(stack, interrupted)[2:]
            == [("user", "completed", "second"), ("assistant", "completed", "still here")]
        ),
        "the interrupted thread to answer a new message",
        timeout=60,
    )
    wait_until(
        lambda: (
            stack.sql(
                "select count(*) from agents_app_threadsession"
                " where status in ('queued', 'running') and thread_id in (%s, %s)",
                uuid.UUID(interrupted),
                uuid.UUID(fresh),
            )
            == [(0,)]
        ),
        "every session to be released",
    )
    text = log.read_text(errors="replace")
    assert "Unrecoverable error" not in text, stack.tails()
    assert worker.popen.poll() is None, stack.tails()
