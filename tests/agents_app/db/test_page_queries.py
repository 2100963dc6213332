"""The messages page and the thread list cost the same number of queries however much
there is (issue #21): no query per row, per subagent or per thread.

Counts, not times: each test measures a small and a large case in the same process and
asserts the counts are equal, so it fails on an N+1 however fast the machine is.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.models import Message, Thread
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def _fill(thread: Thread, start: int, count: int, child: Thread | None = None) -> None:
    Message.objects.bulk_create(
        Message(
            thread=thread,
            role="user" if i % 2 else "assistant",
            content=f"m{i}",
            created_at=1_000_000 + i,
            # Every tenth row is about a subagent (its name and status come from its thread).
            subagent=child if child is not None and i % 10 == 0 else None,
        )
        for i in range(start, start + count)
    )


def _queries(client: Any, url: str) -> tuple[int, Any]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return len(captured), response.json()


def test_newest_messages_page_queries_do_not_grow_with_the_thread(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread, child = thread_of(alice), thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/messages?limit=100"
    _fill(thread, 0, 100, child)
    small, body = _queries(client, url)
    assert (len(body["messages"]), body["total"]) == (100, 100)
    _fill(thread, 100, 900, child)
    large, body = _queries(client, url)
    assert (len(body["messages"]), body["total"], body["hasMore"]) == (100, 1000, True)
    assert body["messages"][-1]["content"] == "m999"
    assert body["messages"][-10]["subagent_name"] == child.agent.name
    assert large == small


def test_thread_list_queries_do_not_grow_with_the_page(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    client = as_(alice)
    for _ in range(3):
        thread_of(alice)
    small, body = _queries(client, "/api/threads?limit=50")
    assert len(body["threads"]) == 3
    for _ in range(47):
        thread_of(alice)
    large, body = _queries(client, "/api/threads?limit=50")
    assert len(body["threads"]) == 50
    assert large == small


def test_page_total_is_counted_from_the_index_on_postgresql() -> None:
    """The (thread, created_at) unique constraint carries depth and silent (migration 0011),
    so the total of the newest page never reads the thread's rows."""
    if connection.vendor != "postgresql":
        pytest.skip("INCLUDE columns exist on PostgreSQL only")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'uniq_message_thread_time'"
        )
        [(definition,)] = cursor.fetchall()
    assert "UNIQUE" in definition
    assert "(thread_id, created_at) INCLUDE (depth, silent)" in definition


def test_an_api_key_in_use_is_stamped_at_most_once_a_minute(as_: Any, alice: Any) -> None:
    client = as_(alice)
    client.get("/api/threads?limit=1")  # stamps last_used_at
    with CaptureQueriesContext(connection) as captured:
        client.get("/api/threads?limit=1")
    assert not [q for q in captured if q["sql"].startswith("UPDATE")]
