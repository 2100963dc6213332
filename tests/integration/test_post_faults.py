"""Posting when the broker is down: a stored write answers 202, never an error, and the sweep
runs it once the broker is back; a retry with the same ``Idempotency-Key`` stores nothing new.

Real processes: a private ``redis-server`` killed and started again, Daphne, a Celery worker
with beat started after the outage (it never saw the message's task).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.effects_stack import RedisServer
from tests.integration.stack import Stack, free_port, wait_until

pytestmark = pytest.mark.integration


class BrokerStack(Stack):
    """The integration stack on a Redis of its own, with a short lost-task limit."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.redis = RedisServer(self.tmp, free_port())
        self.redis_url = f"redis://127.0.0.1:{self.redis.port}/0"
        self.env.update({"REDIS_URL": self.redis_url, "STUDIO_SESSION_REDISPATCH_SECONDS": "2"})

    def start(self) -> BrokerStack:
        self.redis.start()
        super().start()
        return self

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.redis.stop()


@pytest.fixture
def broker_stack(tmp_path: Path) -> Iterator[BrokerStack]:
    stack = BrokerStack(tmp_path).start()
    try:
        yield stack
    finally:
        stack.stop()


def _stored(stack: Stack, content: str) -> int:
    [(count,)] = stack.sql(
        "SELECT (SELECT count(*) FROM agents_app_queuedmessage WHERE content = %s)"
        " + (SELECT count(*) FROM agents_app_message WHERE content = %s)",
        content,
        content,
    )
    return int(count)


def test_post_stored_during_broker_outage_is_accepted_and_run_by_the_sweep(
    broker_stack: BrokerStack,
) -> None:
    stack = broker_stack
    alice = stack.client("alice")
    thread_id = alice.post("/api/threads", json={"agent_id": "greeter"}).json()["threadId"]
    content, key = f"hello during the outage {uuid.uuid4().hex[:6]}", str(uuid.uuid4())

    stack.redis.stop()
    answer = alice.post(
        f"/api/threads/{thread_id}/messages",
        json={"content": content},
        headers={"Idempotency-Key": key},
    )
    assert answer.status_code == 202, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert _stored(stack, content) == 1

    retry = alice.post(
        f"/api/threads/{thread_id}/messages",
        json={"content": content},
        headers={"Idempotency-Key": key},
    )
    assert retry.status_code == 202, retry.text
    assert retry.json()["messageId"] == answer.json()["messageId"]
    assert _stored(stack, content) == 1

    stack.redis.start()
    stack.worker("after-outage", beat=True)
    wait_until(
        lambda: stack.sql(
            "SELECT 1 FROM agents_app_message WHERE thread_id = %s AND role = 'assistant'"
            " AND status = 'completed' AND content LIKE 'Hello Alice%%'",
            thread_id,
        ),
        "the sweep to run the session posted during the outage",
        timeout=90,
    )
    assert _stored(stack, content) == 1
