"""Spec ``getMessages`` and ``GET /api/threads/{id}/messages`` page the same way (issue #15).

The same rows, for every ``limit``/``offset``/``order``, in the same order, with the same
``total`` and ``hasMore``: the engine's ``state.get_messages`` over ``DjangoStore`` against
the API's selector, on one thread.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from agents_app.bridge.store import DjangoStore
from agents_app.models import Message, Thread
from runtime.engine import Engine
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

CASES = [
    (limit, offset, order)
    for order in ("asc", "desc")
    for limit in (1, 2, 3, 100)
    for offset in (0, 1, 2, 4, 6, 9)
]


def _fill(thread: Thread, n: int) -> None:
    for i in range(n):
        Message.objects.create(
            thread=thread, role="user", content=f"m{i}", created_at=1_000_000 + i
        )


def _engine_page(thread: Thread, limit: int, offset: int, order: Any) -> tuple[Any, ...]:
    async def page() -> tuple[Any, ...]:
        state = await Engine(DjangoStore()).thread_state(str(thread.pk))
        got = await state.get_messages(limit=limit, offset=offset, order=order)
        return [m.content for m in got.messages], got.total, got.has_more

    return async_to_sync(page)()


def test_spec_get_messages_and_the_messages_api_page_the_same_way(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    _fill(thread, 7)
    client = as_(alice)
    for limit, offset, order in CASES:
        url = f"/api/threads/{thread.pk}/messages?limit={limit}&offset={offset}&order={order}"
        body = client.get(url).json()
        api = [m["content"] for m in body["messages"]], body["total"], body["hasMore"]
        assert _engine_page(thread, limit, offset, order) == api, (limit, offset, order)
    # The rule itself, once in words: asc pages from the oldest end, desc from the newest.
    assert _engine_page(thread, 2, 1, "asc")[0] == ["m1", "m2"]
    assert _engine_page(thread, 2, 1, "desc")[0] == ["m4", "m5"]
