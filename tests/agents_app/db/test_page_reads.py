"""The messages page in plain SQL (``agents_app.db.page_reads``) answers exactly what the ORM
path answered, for every order, window, depth and silent filter, on whichever database
the suite runs (PostgreSQL gives UUIDs and booleans, SQLite hex strings and integers)."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest

from agents_app import selectors, wire
from agents_app.bridge.store import _list_messages
from agents_app.db.rows import engine_message
from agents_app.models import Log, Message, QueuedMessage, Thread, ThreadSession
from runtime.store.protocol import MessageQuery
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def _orm_page(thread: Thread, q: selectors.MessageQuery) -> tuple[list[dict[str, Any]], int, bool]:
    """The page as the ORM built it before ``page_reads`` (the reference)."""
    stored = Message.objects.filter(thread=thread, depth__lte=q.depth)
    queued_qs = QueuedMessage.objects.filter(thread=thread)
    if not q.include_silent:
        stored = stored.filter(silent=False)
        queued_qs = queued_qs.filter(silent=False)
    queued = [wire.queued_wire(r) for r in queued_qs.order_by("created_at")]
    n_stored = stored.count()
    total = n_stored + len(queued)
    if q.order == "desc":
        from_queue = queued[::-1][q.offset : q.offset + q.limit]
        skip = max(0, q.offset - len(queued))
        take = q.limit - len(from_queue)
        rows = list(stored.order_by("-created_at")[skip : skip + take]) if take > 0 else []
        window = selectors._message_dicts(rows)[::-1] + from_queue[::-1]
    else:
        rows = list(stored.order_by("created_at")[q.offset : q.offset + q.limit])
        skip = max(0, q.offset - n_stored)
        take = q.limit - len(rows)
        window = selectors._message_dicts(rows) + (queued[skip : skip + take] if take > 0 else [])
    return window, total, q.offset + len(window) < total


def _fill(thread: Thread, child: Thread) -> None:
    log = Log.objects.create(thread=thread, model="m", prompt_name="main")
    first = Message.objects.create(
        thread=thread, role="user", content='héllo ✓ "quoted"', created_at=1_000_001
    )
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": '{"a": 1}'}}
    Message.objects.create(
        thread=thread,
        role="assistant",
        content=None,
        tool_calls=[call],
        created_at=1_000_002,
        side="a",
        prompt_name="main",
        log=log,
        request_sent_at=1_000_001,
        response_completed_at=1_000_002,
        reasoning_content="thinking",
        reasoning_details=[{"type": "reasoning.text", "text": "thinking"}],
        metadata={
            "provider_tools": [{"name": "web_search"}],
            "citations": [{"url": "https://example.org", "start": 0, "end": 4}],
            "big": 2**70,
        },
    )
    tool = Message.objects.create(
        thread=thread,
        role="tool",
        name="t",
        tool_call_id="c1",
        tool_status="success",
        content="result",
        created_at=1_000_003,
        attachments=[{"id": "f1", "name": "a.png", "mimeType": "image/png"}],
    )
    Message.objects.create(
        thread=thread, role="user", content="inner", depth=1, parent=tool, created_at=1_000_004
    )
    Message.objects.create(
        thread=thread, role="user", content="quiet", silent=True, created_at=1_000_005
    )
    Message.objects.create(
        thread=thread,
        role="assistant",
        content="from a child",
        subagent=child,
        created_at=1_000_006,
        status="pending",
    )
    for i in range(7, 12):
        Message.objects.create(
            thread=thread, role="user", content=f"m{i}", created_at=1_000_000 + i
        )
    QueuedMessage.objects.create(thread=thread, content="waiting", created_at=2_000_001)
    QueuedMessage.objects.create(
        thread=thread, content="silent wait", silent=True, created_at=2_000_002
    )
    QueuedMessage.objects.create(
        thread=thread,
        content="resumes",
        created_at=2_000_003,
        metadata={"resume": "user"},
        attachments=[{"id": "f2"}],
    )
    assert first.pk  # the oldest row, reached by the ascending windows


def test_plain_sql_page_equals_the_orm_page_for_every_window(alice: Any, thread_of: Any) -> None:
    thread, child = thread_of(alice), thread_of(alice)
    _fill(thread, child)
    cases = itertools.product(
        ("desc", "asc"), (0, 2, 4, 13, 40), (1, 3, 100), (False, True), (0, 1)
    )
    for order, offset, limit, include_silent, depth in cases:
        q = selectors.MessageQuery(
            limit=limit, offset=offset, order=order, include_silent=include_silent, depth=depth
        )
        assert selectors.message_page(thread, q) == _orm_page(thread, q), q


def test_plain_sql_page_of_an_empty_thread(alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    q = selectors.MessageQuery()
    assert selectors.message_page(thread, q) == ([], 0, False) == _orm_page(thread, q)


def test_thread_activity_frame_from_its_fixed_statement(alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    expected = {
        "type": "thread_activity",
        "threadId": str(thread.pk),
        "executing": False,
        "last_activity_at": wire.seconds(thread.last_activity_at),
        "owner_id": alice.pk,
    }
    assert selectors.thread_activity(str(thread.pk)) == expected
    session = ThreadSession.objects.create(thread=thread, status=ThreadSession.Status.QUEUED)
    assert selectors.thread_activity(thread.pk) == {**expected, "executing": True}
    session.status = ThreadSession.Status.COMPLETED
    session.save()
    assert selectors.thread_activity(thread.pk)["executing"] is False  # type: ignore[index]
    assert selectors.thread_activity(str(uuid.uuid4())) is None
    assert selectors.thread_activity("not-a-thread") is None


def _orm_engine_window(thread: Thread, q: MessageQuery) -> tuple[list[Any], int, bool]:
    """The engine's ``list_messages`` as the ORM read it before ``page_reads``."""
    rows = Message.objects.filter(thread=thread)
    if not q.include_silent:
        rows = rows.filter(silent=False)
    if q.max_depth is not None:
        rows = rows.filter(depth__lte=q.max_depth)
    if q.parent_id is not None:
        rows = rows.filter(parent_id=q.parent_id)
    total = rows.count()
    paged = rows.order_by("-created_at" if q.order == "desc" else "created_at")[q.offset :]
    window = list(paged if q.limit is None else paged[: q.limit])
    if q.order == "desc":
        window.reverse()
    return [engine_message(r) for r in window], total, q.offset + len(window) < total


def test_the_engines_history_reads_equal_the_orm_for_every_window(
    alice: Any, thread_of: Any
) -> None:
    thread, child = thread_of(alice), thread_of(alice)
    _fill(thread, child)
    tool = Message.objects.get(thread=thread, role="tool")
    cases = itertools.product(
        ("desc", "asc"),
        (0, 2, 13),
        (None, 1, 3, 100),
        (False, True),
        (0, 1, None),
        (None, str(tool.pk)),
    )
    for order, offset, limit, include_silent, max_depth, parent_id in cases:
        q = MessageQuery(limit, offset, order, include_silent, max_depth, parent_id)
        page = _list_messages(str(thread.pk), q)
        assert (page.messages, page.total, page.has_more) == _orm_engine_window(thread, q), q
    with pytest.raises(LookupError):
        _list_messages("not-a-thread", MessageQuery())
    with pytest.raises(LookupError):
        _list_messages(str(uuid.uuid4()), MessageQuery())


def test_a_read_without_total_counts_nothing_and_reads_the_same_window(
    alice: Any, thread_of: Any
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    thread, child = thread_of(alice), thread_of(alice)
    _fill(thread, child)
    newest = {"limit": 1, "order": "desc", "include_silent": True, "max_depth": None}
    with CaptureQueriesContext(connection) as counted:
        full = _list_messages(str(thread.pk), MessageQuery(**newest))
    with CaptureQueriesContext(connection) as uncounted:
        window = _list_messages(str(thread.pk), MessageQuery(**newest, with_total=False))
    assert window.messages == full.messages and len(window.messages) == 1
    assert (len(counted), len(uncounted)) == (2, 1)  # the window, and the count only once
    assert (window.total, window.has_more) == (1, False)
    with pytest.raises(LookupError):  # an empty window still tells a missing thread
        _list_messages(str(uuid.uuid4()), MessageQuery(**newest, with_total=False))
    with pytest.raises(LookupError):  # past the first page too
        _list_messages(str(uuid.uuid4()), MessageQuery(**newest, offset=5, with_total=False))
    past = MessageQuery(**{**newest, "limit": 5}, offset=50, with_total=False)
    assert _list_messages(str(thread.pk), past).messages == []  # a thread's end: no error


def _orm_record(thread: Thread) -> Any:
    """The record as the ORM row reads it: the oracle for the fixed statements."""
    from runtime.core.progress import ThreadExecutionState
    from runtime.store.protocol import ThreadRecord

    row = Thread.objects.select_related("agent", "origin_agent").get(pk=thread.pk)
    return ThreadRecord(
        id=str(row.id),
        agent_name=row.agent.name,
        origin_agent_name=row.origin_agent.name,
        user_id=str(row.owner_id) if row.owner_id else None,
        parent_id=str(row.parent_id) if row.parent_id else None,
        tags=list(row.tags),
        created_at=int(row.created_at.timestamp() * 1_000_000),
        stopped=row.stopped,
        terminated=row.terminated_at is not None,
        execution_state=ThreadExecutionState.model_validate(row.execution_state or {}),
        display_name=row.display_name,
        relationship=row.relationship,
        child_status=row.child_status,
        subagent=row.subagent_config,
    )


def test_the_thread_record_equals_the_orms(alice: Any, thread_of: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.bridge.store import _get_thread, _list_children

    parent = thread_of(alice)
    child = thread_of(alice)
    Thread.objects.filter(pk=child.pk).update(
        parent=parent,
        tags=["a", "b ✓"],
        stopped=True,
        terminated_at=timezone.now(),
        execution_state={"turns": {"a": 3, "b": 1}, "last_stop_reason": "stop_on_response"},
        display_name="Researcher",
        relationship="helper",
        child_status="running",
        subagent_config={"blocking": True, "big": 2**70},
    )
    # An older second child: the children come oldest first.
    older = thread_of(alice)
    Thread.objects.filter(pk=older.pk).update(
        parent=parent, created_at=timezone.now() - timedelta(days=1)
    )
    ownerless = thread_of(alice)
    Thread.objects.filter(pk=ownerless.pk).update(owner=None)
    for thread in (parent, child, older, ownerless):
        assert _get_thread(str(thread.pk)) == _orm_record(thread)
    assert _list_children(str(parent.pk)) == [_orm_record(older), _orm_record(child)]
    assert _list_children(str(child.pk)) == []
    assert _get_thread(str(uuid.uuid4())) is None
    assert _get_thread("not-a-thread") is None
    with pytest.raises(LookupError):
        _list_children(str(uuid.uuid4()))
