"""The session task's direct publish (agents_app/orchestration/session_publish.py, issue #58):
the message it pushes is kombu's own, key for key; kombu's consumer reads it; it costs a
fraction of ``send_task``'s calls; and the dispatch uses it only where its envelope holds.
Real Redis (``TEST_REDIS_URL``), a queue of the test's own."""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from celery import Celery
from kombu import Connection

from agents_app.base.task_names import RUN_SESSION
from agents_app.orchestration import executor
from agents_app.orchestration.session_publish import TaskPublisher, direct_publisher
from tests.agents_app.start_meter import CallCounter, over_budget

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def app() -> Iterator[Celery]:
    """A Celery app configured as the platform's (studio/settings.py), on the test's Redis
    and a queue of its own."""
    celery = Celery("session-publish-test", set_as_current=False)
    celery.config_from_object("django.conf:settings", namespace="CELERY")
    # Under the settings' namespace the keys keep their prefix.
    celery.conf.update(
        CELERY_BROKER_URL=REDIS_URL,
        CELERY_TASK_DEFAULT_QUEUE=f"publish-test-{uuid.uuid4().hex[:8]}",
    )
    yield celery
    redis.Redis.from_url(REDIS_URL).delete(celery.conf.task_default_queue)
    celery.close()


def _popped(app: Celery) -> dict[str, Any]:
    raw = redis.Redis.from_url(REDIS_URL).rpop(app.conf.task_default_queue)
    assert raw is not None, "nothing was published"
    return json.loads(raw)  # type: ignore[no-any-return, arg-type]


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    """The message with what differs between two publishes (ids) taken out and the body
    decoded."""
    copy = json.loads(json.dumps(message))
    copy["body"] = json.loads(base64.b64decode(copy["body"]))
    task_id = copy["headers"].pop("id")
    assert copy["headers"].pop("root_id") == task_id
    assert copy["properties"].pop("correlation_id") == task_id
    uuid.UUID(copy["properties"].pop("delivery_tag"))
    return copy


def test_the_direct_message_is_the_one_kombu_writes(app: Celery) -> None:
    app.send_task(RUN_SESSION, ("session-1",))
    theirs = _popped(app)
    TaskPublisher(app).publish(RUN_SESSION, ("session-1",))
    ours = _popped(app)
    assert list(ours) == list(theirs)
    assert _without_ids(ours) == _without_ids(theirs)
    assert ours["headers"]["id"] != theirs["headers"]["id"]  # a fresh task id each


def test_kombus_consumer_reads_the_direct_message(app: Celery) -> None:
    TaskPublisher(app).publish(RUN_SESSION, ("session-2",))
    with Connection(REDIS_URL) as connection:
        queue = connection.SimpleQueue(app.conf.task_default_queue)
        try:
            message = queue.get(timeout=5)
            assert message.headers["task"] == RUN_SESSION
            args, kwargs, _embed = message.decode()
            assert (args, kwargs) == (["session-2"], {})
            message.ack()
        finally:
            queue.close()


# Python calls of one publish after a first one (the client connected), measured when the
# direct publish replaced ``send_task`` (which made 670 then, building a Redis client per
# message): a publish may cost 10% more before this fails.
DIRECT_PUBLISH_CALLS = 143


def test_a_direct_publish_costs_a_fraction_of_send_tasks_calls(app: Celery) -> None:
    publisher = TaskPublisher(app)
    publisher.publish(RUN_SESSION, ("warm",))
    app.send_task(RUN_SESSION, ("warm",))
    with CallCounter() as direct:
        publisher.publish(RUN_SESSION, ("session-3",))
    with CallCounter() as celery:
        app.send_task(RUN_SESSION, ("session-3",))
    assert direct.total <= DIRECT_PUBLISH_CALLS * 1.1, over_budget(
        direct.calls, {"total": DIRECT_PUBLISH_CALLS}
    )
    assert direct.total * 2 < celery.total, (direct.total, celery.total)
    # kombu's per-message client: the direct path builds none.
    assert not any(key.startswith("redis.client:Redis.__init__") for key in direct.calls)
    assert any(key.startswith("redis.client:Redis.__init__") for key in celery.calls)


def test_the_dispatch_publishes_directly_only_where_the_envelope_holds(
    app: Celery, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    assert direct_publisher(app) is direct_publisher(app)  # one per process
    memory = Celery("memory-broker", set_as_current=False, broker="memory://")
    assert direct_publisher(memory) is None
    failover = Celery("failover", set_as_current=False, broker=f"{REDIS_URL};{REDIS_URL}")
    assert direct_publisher(failover) is None
    routed = Celery("routed", set_as_current=False, broker=REDIS_URL)
    routed.conf.task_routes = {RUN_SESSION: {"queue": "elsewhere"}}
    assert direct_publisher(routed) is None

    settings.STUDIO_EXECUTOR = "celery"
    monkeypatch.setattr(executor, "current_app", app)
    executor.dispatch("session-4")
    assert _popped(app)["headers"]["argsrepr"] == "('session-4',)"
    # With tracing on, Celery publishes (its signals carry the trace context).
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(executor.tracing, "enabled", lambda: True)
    monkeypatch.setattr(app, "send_task", lambda *a, **k: sent.append(a))
    executor.dispatch("session-5")
    assert sent == [(RUN_SESSION, ("session-5",))]
