"""A stop while a worker consumes a queued message: the worker's one-statement commit deletes
the queued row (storing it as a message) and then updates the thread, while ``thread_stop``
holds the thread's lock and clears the resume mark of the queued rows. Waiting for that row
was a deadlock, and PostgreSQL aborted the stop (a CI run's ``/mcp`` test: a client that went
away left its session running)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.db import connection

from agents_app import wire
from agents_app.models import QueuedMessage, Thread
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.sessions.lifecycle import thread_stop
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.services.retention_support import backends_waiting_for_a_lock, in_background
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgresql("row locks between two connections"),
]


def _worker_connection() -> psycopg.Connection[Any]:
    db = connection.settings_dict
    params = {"dbname": db["NAME"], "user": db["USER"], "host": db["HOST"], "port": db["PORT"]}
    return psycopg.connect(**{k: v for k, v in params.items() if v})


def test_a_stop_while_a_worker_consumes_a_marked_message_stops_without_a_deadlock(
    alice: Any,
) -> None:
    define_agent("helper")
    thread = thread_create(user=alice, agent_name="helper")
    consumed = QueuedMessage.objects.create(
        thread=thread, content="wake up", metadata={wire.RESUME_MARK: wire.RESUME_VALUE}
    )
    kept = QueuedMessage.objects.create(
        thread=thread, content="later", metadata={wire.RESUME_MARK: wire.RESUME_VALUE}
    )
    with _worker_connection() as worker:
        # The worker's commit has deleted the row it stores as a message…
        worker.execute("DELETE FROM agents_app_queuedmessage WHERE id = %s", [consumed.pk])
        stop = in_background(lambda: thread_stop(thread=Thread.objects.get(pk=thread.pk)))
        # …and the stop holds the thread's lock: it has finished, or it waits for that row.
        wait_until(
            lambda: stop.result(timeout=0.05) is None or backends_waiting_for_a_lock() > 0,
            "the stop to finish or to wait for the consumed row",
        )
        # The worker's commit goes on to the thread's row.
        worker.execute(
            "UPDATE agents_app_thread SET last_activity_at = now() WHERE id = %s", [thread.pk]
        )
        worker.commit()
    assert stop.result(timeout=30) is None
    assert Thread.objects.get(pk=thread.pk).stopped
    assert not QueuedMessage.objects.filter(pk=consumed.pk).exists()
    assert QueuedMessage.objects.get(pk=kept.pk).metadata == {}
