"""A task's delivery to a worker keeps no copy in Redis (studio/settings.py: kombu's ack
emulation is off; issue #58). The database sweeps every task's row, so the copy only came
back after an hour, and it cost each delivery and each ack a Redis transaction. What stays:
a worker that closes its connection pushes back what it received and did not finish.

Delivered as the worker's consumer takes them: the platform's Celery settings, the app's own
queue declaration, kombu's consumer with a prefetch of one. Real Redis (``TEST_REDIS_URL``),
a queue of the test's own."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from celery import Celery
from kombu import Connection, Consumer
from kombu.message import Message

from agents_app.base.task_names import RUN_SESSION
from agents_app.orchestration.session_publish import TaskPublisher
from tests.agents_app.orchestration.test_session_publish import REDIS_URL
from tests.agents_app.orchestration.test_session_publish import app as app  # noqa: F401
from tests.agents_app.start_meter import CallCounter, over_budget


class Worker:
    """One consumer of the app's default queue, as a worker's (prefetch one)."""

    def __init__(self, app: Celery) -> None:
        self.connection: Connection = app.connection_for_read()
        self.received: list[Message] = []
        queue = app.amqp.queues[app.conf.task_default_queue]
        self.consumer = Consumer(
            self.connection.default_channel,
            queues=[queue],
            on_message=self.received.append,
            accept=["json"],
        )
        self.consumer.qos(prefetch_count=1)
        self.consumer.consume()

    def take(self) -> Message:
        self.connection.drain_events(timeout=5)
        return self.received.pop()

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def worker(app: Celery) -> Iterator[Worker]:  # noqa: F811
    consumer = Worker(app)
    yield consumer
    consumer.close()


def _broker() -> redis.Redis:
    return redis.Redis.from_url(REDIS_URL)


def test_a_delivered_task_leaves_no_copy_in_the_broker(app: Celery, worker: Worker) -> None:  # noqa: F811
    TaskPublisher(app).publish(RUN_SESSION, ("session-1",))
    message = worker.take()
    tag = message.delivery_tag
    assert message.headers["argsrepr"] == "('session-1',)"
    broker = _broker()
    assert broker.llen(app.conf.task_default_queue) == 0
    # kombu's ack emulation would hold the message here until the ack (and hand it to
    # another worker an hour later if none came).
    assert not broker.hexists("unacked", tag)
    assert broker.zscore("unacked_index", tag) is None
    message.ack()
    assert broker.llen(app.conf.task_default_queue) == 0


def test_a_worker_that_closes_gives_back_what_it_did_not_finish(
    app: Celery,  # noqa: F811
) -> None:
    TaskPublisher(app).publish(RUN_SESSION, ("session-2",))
    closing = Worker(app)
    message = closing.take()
    task_id = message.headers["id"]
    closing.close()  # a warm shutdown: the task was received, never acknowledged
    [raw] = _broker().lrange(app.conf.task_default_queue, 0, -1)
    assert json.loads(raw)["headers"]["id"] == task_id
    again = Worker(app)
    try:
        assert again.take().headers["id"] == task_id
    finally:
        again.close()


# Python calls of one task's delivery and its ack on a warm consumer, measured when kombu's
# ack emulation went: 812 with it (a Redis client and a transaction built for each of the
# two), 108 without. A delivery may cost 10% more before this fails.
DELIVERY_CALLS = 108


def test_a_delivery_and_its_ack_cost_a_bounded_number_of_calls(
    app: Celery,  # noqa: F811
    worker: Worker,
) -> None:
    publisher = TaskPublisher(app)
    publisher.publish(RUN_SESSION, ("warm",))
    worker.take().ack()
    publisher.publish(RUN_SESSION, ("session-3",))
    with CallCounter() as counter:
        worker.take().ack()
    assert counter.total <= DELIVERY_CALLS * 1.1, over_budget(
        counter.calls, {"total": DELIVERY_CALLS}
    )
    assert not any(key.startswith("redis.client:Redis.__init__") for key in counter.calls)
