"""200 real concurrent posts against a database that takes 20 connections: every answer is a
202 or a JSON 503 with ``Retry-After`` (never HTML, never a 500), every 202 is stored exactly
once, no refused post is stored, and retrying the refused ones with their
``Idempotency-Key`` stores each message exactly once.

The limit is PostgreSQL's own (``ALTER ROLE … CONNECTION LIMIT``, ``tests/integration/flood.py``),
so the errors are the server's real "too many connections".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.flood import FloodStack, flood, retry_refused

pytestmark = pytest.mark.integration

POSTS, THREADS, CONNECTIONS = 200, 20, 20


@pytest.fixture
def flood_stack(tmp_path: Path) -> Iterator[FloodStack]:
    stack = FloodStack(tmp_path).start()
    try:
        yield stack
    finally:
        stack.stop()


def test_flood_of_posts_answers_202_or_json_503_and_stores_each_accepted_post_once(
    flood_stack: FloodStack,
) -> None:
    stack = flood_stack
    with stack.client("alice") as client:
        ids = [
            client.post("/api/threads", json={"agent_id": "greeter"}).json()["threadId"]
            for _ in range(THREADS)
        ]
    stack.limit(CONNECTIONS)
    result = flood(stack, "alice", ids, POSTS)
    figures = result.figures()
    assert set(result.statuses()) <= {"202", "503"}, figures
    assert all(p.status == 202 or p.json_503 for p in result.posts), figures
    assert figures["accepted stored once"] == sum(p.status == 202 for p in result.posts), figures
    assert figures["refused but stored"] == 0, figures
    assert figures["stored more than once"] == 0, figures

    retry_refused(stack, "alice", result)
    assert [p.status for p in result.posts] == [202] * POSTS, result.figures()
    assert all(result.stored[p.content] == 1 for p in result.posts), result.figures()
