"""What a session start reads on its worker's one database thread (issue #21).

The claiming statement also reads what the start's ``thread_activity`` announcement says of
the thread, the engine's first ``load_progress`` takes the progress the claim read, the
plan's queue read brings the thread's engine record (the engine's first ``get_thread``), and
an empty history of the claimed thread is not checked for existence, and the history brings
the newest time of all the thread's messages (the engine's clock reads it). Each of these was a
statement of its own on the one thread every start of a worker goes through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.utils import timezone

from agents_app import selectors, wire
from agents_app.bridge import store as bridge_store
from agents_app.broadcast.events import REGISTRY_ALL
from agents_app.db import page_reads, thread_records
from agents_app.models import Thread, ThreadSession
from agents_app.orchestration import runner
from agents_app.orchestration.runner import run_session_job
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.threads import messages as message_service
from runtime.core.progress import SessionProgress
from runtime.store.protocol import Commit, MessageQuery
from tests.agents_app.api.api_support import _api_hosts  # noqa: F401
from tests.agents_app.api.test_api_sessions import _active_session, _post, _setup, _transcript
from tests.agents_app.orchestration.test_images_to_vendors import _setup as vendor_thread
from tests.runtime.providers import recordings
from tests.runtime.providers.replay import ReplayServer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


class Statements:
    """The SQL run on the database thread (where ``sync_to_async`` runs Django's work)."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        self.sql.append(sql)
        return execute(sql, *args)

    # ``connection`` is per thread: it is looked up on the database thread itself.
    async def __aenter__(self) -> Statements:
        await sync_to_async(lambda: connection.execute_wrappers.append(self))()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await sync_to_async(lambda: connection.execute_wrappers.remove(self))()

    def count(self, sql: str) -> int:
        return self.sql.count(sql)


async def _activity_frames(channel: str) -> list[dict[str, Any]]:
    layer = get_channel_layer()
    frames = []
    while True:
        try:
            message = await asyncio.wait_for(layer.receive(channel), 0.5)
        except TimeoutError:
            return frames
        if message["frame"].get("type") == "thread_activity":
            frames.append(message["frame"])


async def test_a_session_start_reads_no_progress_activity_or_thread_check_of_its_own(
    alice: Any,
) -> None:
    thread = await _setup(alice, [{"content": "hi there"}])
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(REGISTRY_ALL, channel)
    await _post(thread, "hello")
    session_id = await _active_session(thread)
    active_at = (await Thread.objects.aget(pk=thread.pk)).last_activity_at
    await _activity_frames(channel)  # the post's own announcement

    async with Statements() as statements:
        await asyncio.wait_for(run_session_job(session_id), 30)

    assert await _transcript(thread) == [
        ("user", "completed", "hello"),
        ("assistant", "completed", "hi there"),
    ]
    # The start's announcement comes from the claim, the end's from the release's own read.
    assert statements.count(selectors._ACTIVITY_SQL) == 0, statements.sql
    assert statements.count(runner._PROGRESS_SQL) == 0, statements.sql
    assert statements.count(bridge_store._EXISTS_SQL) == 0, statements.sql
    assert statements.count(thread_records.RECORD.sql) == 0, statements.sql  # the plan read it
    frames = await _activity_frames(channel)
    assert [f["executing"] for f in frames] == [True, False], frames
    assert frames[0] == {
        "type": "thread_activity",
        "threadId": str(thread.pk),
        "executing": True,
        "last_activity_at": wire.seconds(active_at),
    }


async def test_a_session_ends_with_three_statements_and_announces_what_they_read(
    alice: Any,
) -> None:
    """The end touches the thread, ends the row, and reads in the same transaction whether
    work is queued, whether the thread still executes and whether any webhook subscription
    is active: the webhook check and the announcement's read were two more statements on
    the worker's one database thread after the commit (issue #39)."""
    thread = await _setup(alice, [{"content": "first"}, {"content": "hi there"}])
    await _post(thread, "warm")  # the process's first session records the baselines
    await asyncio.wait_for(run_session_job(await _active_session(thread)), 30)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(REGISTRY_ALL, channel)
    await _post(thread, "hello")
    session_id = await _active_session(thread)
    await _activity_frames(channel)

    async with Statements() as statements:
        await asyncio.wait_for(run_session_job(session_id), 30)

    touch = statements.sql.index(sessions._RELEASE_TOUCH_SQL)
    assert statements.sql[touch:] == [
        sessions._RELEASE_TOUCH_SQL,
        sessions._RELEASE_END_SQL,
        sessions._RELEASE_AFTER_SQL,
    ], statements.sql
    # The whole session, start to end, on PostgreSQL: claim, start read, pins and their fix,
    # history, secrets, the scripted provider's count, and the end's three.
    if connection.vendor == "postgresql":
        assert len(statements.sql) == 10, statements.sql
    assert statements.count(bridge_store._LLM_RESPONSES_SQL) == 1, statements.sql
    stored = await Thread.objects.aget(pk=thread.pk)
    frames = await _activity_frames(channel)
    assert frames[-1] == {
        "type": "thread_activity",
        "threadId": str(thread.pk),
        "executing": False,
        "last_activity_at": wire.seconds(stored.last_activity_at),
        # Spec 0.2.0's unread rule (#54 I1): read by the release's touch, no statement more.
        "last_message_at": wire.seconds(stored.last_message_at),
    }


async def test_a_claimed_session_reads_its_progress_from_the_claim_until_it_commits(
    alice: Any, settings: Any
) -> None:
    """A session taken over from a dead worker resumes from the progress its claim read,
    without reading it again; once it committed progress, the row is read again."""
    thread = await _setup(alice, [{"content": "first"}])
    stored = SessionProgress(session_id="s-1", agent="helper", side="a", steps=2)
    stale = timezone.now() - timedelta(seconds=settings.STUDIO_SESSION_STALE_SECONDS + 5)
    row = await ThreadSession.objects.acreate(
        thread=thread, status="running", owner="dead", heartbeat_at=stale, progress=stored.dump()
    )
    claim = await sync_to_async(sessions.session_claim)(str(row.pk), "worker-1")
    assert claim is not None
    store = runner.ClaimedStore(claim)
    async with Statements() as statements:
        assert await store.load_progress(claim.thread_id) == stored
        page = await store.list_messages(claim.thread_id, MessageQuery(limit=None))
    assert page.messages == []
    assert statements.count(runner._PROGRESS_SQL) == 0, statements.sql
    assert statements.count(bridge_store._EXISTS_SQL) == 0, statements.sql

    newer = stored.model_copy(update={"steps": 3})
    await store.commit(claim.thread_id, Commit(progress=newer))
    async with Statements() as statements:
        assert await store.load_progress(claim.thread_id) == newer
    assert statements.count(runner._PROGRESS_SQL) == 1, statements.sql


async def test_the_start_read_brings_the_threads_record_as_the_store_reads_it(
    alice: Any,
) -> None:
    thread = await _setup(alice, [{"content": "first"}])
    await _post(thread, "hello")
    read = await sync_to_async(sessions.session_start_read)(str(thread.pk))
    assert read.park is False and read.head is not None and read.head.content == "hello"
    assert read.thread == await sync_to_async(bridge_store._get_thread)(str(thread.pk))

    # A stopped thread whose queue does not resume it parks: no record for the engine.
    await sync_to_async(sessions.thread_stop)(thread=thread)
    read = await sync_to_async(sessions.session_start_read)(str(thread.pk))
    assert (read.park, read.head, read.thread) == (True, None, None)


async def test_the_history_brings_the_newest_time_in_its_statement(alice: Any) -> None:
    """One statement reads the start's history and the newest time of all the thread's
    messages, on a thread with messages and on a new thread (its history empty) alike."""
    thread = await _setup(alice, [{"content": "first answer"}, {"content": "second answer"}])
    await _post(thread, "hello")
    async with Statements() as statements:
        await asyncio.wait_for(run_session_job(await _active_session(thread)), 30)
    assert statements.count(page_reads.NEWEST_SQL) == 0, statements.sql
    history = [sql for sql in statements.sql if page_reads.NEWEST_SQL in sql]
    assert len(history) == 1, statements.sql

    await _post(thread, "again")
    async with Statements() as statements:
        await asyncio.wait_for(run_session_job(await _active_session(thread)), 30)
    assert await _transcript(thread) == [
        ("user", "completed", "hello"),
        ("assistant", "completed", "first answer"),
        ("user", "completed", "again"),
        ("assistant", "completed", "second answer"),
    ]
    assert statements.count(page_reads.NEWEST_SQL) == 0, statements.sql
    history = [sql for sql in statements.sql if page_reads.NEWEST_SQL in sql]
    assert len(history) == 1, statements.sql


@sync_to_async
def _post_text(thread: Thread, text: str) -> str:
    message_service.message_post(thread=thread, role="user", content=text)
    row = ThreadSession.objects.filter(thread=thread, status__in=["queued", "running"]).first()
    assert row is not None
    return str(row.pk)


async def test_a_vendor_models_session_does_not_count_the_threads_responses(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a thread's stored responses feeds ``request.sequence``, which only the scripted
    ``test`` provider reads: a session of a vendor's model (a real adapter, a local server
    answering with a recorded reply) does not run it. Its request resolves the key in one
    statement (the thread's agent, owner and prompt by subqueries; it read the thread first),
    and a base URL other than the vendor's own host adds the egress rule's read (issue #39)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-count")
    replay = ReplayServer().start()
    try:
        thread = await vendor_thread(alice, "openai", replay.url, vision=None)
        reply = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")[1]
        replay.queue(reply.reply())
        await asyncio.wait_for(run_session_job(await _post_text(thread, "warm")), 30)
        replay.queue(reply.reply())
        session_id = await _post_text(thread, "hello")
        async with Statements() as statements:
            await asyncio.wait_for(run_session_job(session_id), 30)
        assert len(replay.requests) == 2
        assert statements.count(bridge_store._LLM_RESPONSES_SQL) == 0, statements.sql
        assert statements.count(bridge_store._RESOLVE_ENV_SQL) == 1, statements.sql
        # The scripted session's ten, less the count, plus the key and the egress rule.
        if connection.vendor == "postgresql":
            assert len(statements.sql) == 11, "\n".join(s[:110] for s in statements.sql)
    finally:
        replay.stop()
