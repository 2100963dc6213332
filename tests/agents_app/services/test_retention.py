"""Retention on PostgreSQL: the right rows go in bounded batches, in-use threads stay, and
sessions writing meanwhile are never blocked."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from agents_app.models import (
    EnvValue,
    Log,
    Message,
    RetentionPolicy,
    ScheduledEffect,
    Thread,
    ThreadFile,
    ThreadFileChunk,
    ThreadSession,
    ThreadValue,
)
from agents_app.services.operations.retention import retention_apply
from agents_app.services.threads import files as thread_files
from tests.agents_app.services.retention_support import (
    NOW,
    Statements,
    ago,
    backends_waiting_for_a_lock,
    fill,
    in_background,
    in_other_connection,
    make_agent,
    make_effects,
    make_threads,
    recording,
    us_ago,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

BATCH = 1000


@pytest.fixture
def policy(settings: Any, tmp_path: Path) -> Any:
    settings.STUDIO_RETENTION_THREAD_DAYS = 30
    settings.STUDIO_RETENTION_LOG_DAYS = 60
    settings.STUDIO_RETENTION_LOG_BODY_DAYS = 7
    settings.STUDIO_RETENTION_EFFECT_DAYS = 14
    settings.STUDIO_RETENTION_BATCH = BATCH
    settings.STUDIO_FILE_CHUNK_SIZE = 1024
    settings.MEDIA_ROOT = str(tmp_path)
    return settings


def _session_writes(thread_id: Any, session_id: Any) -> Any:
    """What a running session does in one step: a message, a log, its heartbeat, its thread."""

    def work() -> None:
        with transaction.atomic():
            Message.objects.create(thread_id=thread_id, role="assistant", content="still here")
            Log.objects.create(thread_id=thread_id, input_tokens=1, request_body={"a": 1})
            ThreadSession.objects.filter(pk=session_id).update(heartbeat_at=timezone.now())
            Thread.objects.filter(pk=thread_id).update(last_message_preview="still here")

    return work


@pytest.mark.sweep
def test_retention_on_100k_rows_deletes_what_is_old_in_bounded_batches_without_blocking_sessions(
    policy: Any,
) -> None:
    built = time.monotonic()
    agent = make_agent()
    old = make_threads(agent, 1000, idle_days=100)
    recent = make_threads(agent, 200, idle_days=1)
    fill(old, messages=40, logs={100: 40}, values=2)
    fill(recent, messages=40, logs={90: 20, 30: 10, 1: 10}, values=2)
    make_effects(recent, each=3, status="completed", done_days=30)
    make_effects(recent, each=2, status="failed", done_days=1)
    make_effects(recent[:50], each=1, status="pending", done_days=0)

    running, queued, waiting, parent_of_recent, parent_of_old, with_files = old[:6]
    run_session = ThreadSession.objects.create(thread=running, status="running", owner="w1")
    ThreadSession.objects.create(thread=queued, status="queued")
    make_effects([waiting], each=1, status="pending", done_days=0)
    (busy_child,) = make_threads(agent, 1, idle_days=1, parent=parent_of_recent)
    (idle_child,) = make_threads(agent, 1, idle_days=90, parent=parent_of_old)
    (old_child_of_recent,) = make_threads(agent, 1, idle_days=90, parent=recent[0])
    fill([busy_child, idle_child, old_child_of_recent], messages=5, logs={1: 2}, values=1)
    Message.objects.create(
        thread=parent_of_old, role="tool", content="spawned", subagent=idle_child, created_at=1
    )
    EnvValue(scope="thread", thread=with_files, key="TOKEN", value="v").save()
    small, _ = thread_files.write(str(with_files.pk), "/a.txt", b"hello", "text/plain")
    big, _ = thread_files.write(str(with_files.pk), "/b.bin", b"x" * 5000, "application/pdf")
    blobs = thread_files.blob_names_of_threads([with_files.pk])
    assert big.is_chunked and len(blobs) >= 6
    # A recent log pointing at an old one (retry of, child of) and a message pointing at it.
    old_log = Log.objects.filter(thread=recent[0], created_at__lt=us_ago(60)).first()
    assert old_log is not None
    newer = Log.objects.create(thread=recent[0], parent=old_log, retry_of=old_log)
    Message.objects.filter(thread=recent[0]).update(log=old_log)
    completed = ScheduledEffect.objects.filter(thread=recent[1], status="completed").first()
    replay = ScheduledEffect.objects.create(
        thread=recent[1], name="note", due_at=ago(0), replayed_from=completed
    )

    total = sum(
        m.objects.count()
        for m in (Thread, Message, Log, ThreadValue, ScheduledEffect, ThreadFile, ThreadFileChunk)
    )
    assert total >= 100_000
    built = time.monotonic() - built

    blocked: dict[str, str | None] = {}

    def while_holding_locks(statement: str) -> None:
        # The first time each kind of write runs, retention is inside that batch's
        # transaction: a running session must still be able to write.
        blocked[statement] = in_other_connection(_session_writes(running.pk, run_session.pk))

    started = time.monotonic()
    with recording(Statements(on_first=while_holding_locks)) as statements:
        report = retention_apply()
    took = time.monotonic() - started
    print(
        f"\nretention on {total} rows: built in {built:.1f} s, applied in {took:.1f} s, "
        f"{report.transactions} transactions, {len(statements.writes)} writes; "
        + "; ".join(report.lines())
    )

    assert report.finished
    # Bounded batches: no statement touched more than a batch, and the work was split.
    assert statements.largest <= BATCH and report.largest_statement <= BATCH
    assert report.transactions >= 1000 * 82 // BATCH
    # Never blocked: every concurrent session write completed while retention held its locks.
    assert {
        "DELETE agents_app_message",
        "DELETE agents_app_thread",
        "UPDATE agents_app_log",
    } <= set(blocked)
    assert all(error is None for error in blocked.values()), blocked

    kept_old = {running.pk, queued.pk, waiting.pk, parent_of_recent.pk, busy_child.pk}
    expected_threads = {t.pk for t in recent} | kept_old | {old_child_of_recent.pk}
    assert set(Thread.objects.values_list("pk", flat=True)) == expected_threads
    assert report.deleted["agents_app.Thread"] == 1000 - 4 + 1  # the idle child went too
    # Everything of the deleted threads went with them; the kept threads keep their messages.
    for model in (Message, ThreadValue, ScheduledEffect, EnvValue, ThreadFile, Log):
        orphans = model.objects.exclude(thread_id__in=expected_threads)  # type: ignore[attr-defined]
        assert not orphans.exists(), model
    assert Message.objects.filter(thread=running, role="user").count() == 40
    assert not ThreadFileChunk.objects.exists()
    assert not any((Path(policy.MEDIA_ROOT) / name).exists() for name in blobs)
    # Logs: older than 60 days gone everywhere; 7 to 60 days trimmed, numbers intact.
    assert not Log.objects.filter(created_at__lt=us_ago(60)).exists()
    trimmed = Log.objects.filter(created_at__lt=us_ago(7))
    assert trimmed.count() == 200 * 10
    assert not trimmed.filter(request_body__isnull=False).exists()
    assert not trimmed.exclude(system_prompt="").exists()
    assert set(trimmed.values_list("total_tokens", "latency_ms").distinct()) == {(15, 120)}
    assert Log.objects.filter(created_at__gte=us_ago(7), request_body__isnull=False).count() >= (
        200 * 10
    )
    newer.refresh_from_db()
    assert newer.parent_id is None and newer.retry_of_id is None
    assert not Message.objects.filter(log_id=old_log.pk).exists()
    # Effects: finished ones older than 14 days gone; recent finished and pending stay.
    assert not ScheduledEffect.objects.filter(completed_at__lt=ago(14)).exists()
    assert ScheduledEffect.objects.filter(status="failed").count() == 400
    assert ScheduledEffect.objects.filter(status="pending").count() == 50 + 1 + 1
    replay.refresh_from_db()
    assert replay.replayed_from_id is None


def test_a_thread_whose_session_starts_during_retention_is_kept(policy: Any) -> None:
    from agents_app.services.threads.messages import message_post

    policy.STUDIO_EXECUTOR = "none"
    policy.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    agent = make_agent()
    (thread,) = make_threads(agent, 1, idle_days=100)
    # Logs of 40 days: past the thread period (30), within the log period (60).
    fill([thread], messages=3000, logs={40: 1500}, values=5)
    poster: list[Any] = []

    def post_meanwhile(statement: str) -> None:
        # Retention is inside the transaction deleting the thread's first batch of rows:
        # the user's post waits for that thread lock, then commits, and retention must
        # leave the thread (and the new session) alone from then on.
        if statement.startswith("DELETE") and not poster:
            poster.append(
                in_background(lambda: message_post(thread=thread, role="user", content="back"))
            )
            wait_until(
                lambda: backends_waiting_for_a_lock() == 1,
                "the post to wait for the lock retention holds",
                timeout=60,
                interval=0.05,
            )

    with recording(Statements(on_first=post_meanwhile)) as statements:
        report = retention_apply()

    assert poster[0].result() is None
    assert Thread.objects.filter(pk=thread.pk).exists()
    assert ThreadSession.objects.filter(thread=thread, status="queued").exists()
    # At most the batch in flight went; nothing after the post committed.
    assert [n for what, n in statements.writes if what.startswith("DELETE")] == [1000], (
        statements.writes
    )
    remaining = Message.objects.count() + Log.objects.count() + ThreadValue.objects.count()
    assert remaining == 3000 + 1500 + 5 - 1000
    assert report.threads_kept == 1 and "agents_app.Thread" not in report.deleted


def test_retention_never_waits_for_a_thread_locked_by_a_session(policy: Any) -> None:
    agent = make_agent()
    locked, free = make_threads(agent, 2, idle_days=100)
    fill([locked, free], messages=10, logs={}, values=0)
    db = connection.settings_dict
    params = {"dbname": db["NAME"], "user": db["USER"], "host": db["HOST"], "port": db["PORT"]}
    other = psycopg.connect(**{k: v for k, v in params.items() if v})
    try:
        other.execute("SELECT 1 FROM agents_app_thread WHERE id = %s FOR UPDATE", [locked.pk])
        report = retention_apply()
    finally:
        other.rollback()
        other.close()
    assert set(Thread.objects.values_list("pk", flat=True)) == {locked.pk}
    assert report.threads_kept == 1 and report.deleted["agents_app.Thread"] == 1


def test_defaults_keep_everything(settings: Any) -> None:
    agent = make_agent()
    old = make_threads(agent, 3, idle_days=3650)
    fill(old, messages=2, logs={3650: 2}, values=1)
    make_effects(old, each=1, status="completed", done_days=3650)
    before = [m.objects.count() for m in (Thread, Message, Log, ScheduledEffect)]
    report = retention_apply()
    assert [m.objects.count() for m in (Thread, Message, Log, ScheduledEffect)] == before
    assert not Log.objects.filter(request_body__isnull=True).exists()
    assert report.deleted == {} and report.log_bodies_trimmed == 0


def test_dry_run_reports_what_a_real_run_then_does_and_changes_nothing(policy: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    agent = make_agent()
    old = make_threads(agent, 3, idle_days=100)
    recent = make_threads(agent, 1, idle_days=1)
    fill(old, messages=4, logs={100: 2}, values=1)
    fill(recent, messages=1, logs={90: 5, 30: 3}, values=0)
    out = StringIO()
    call_command("apply_retention", "--dry-run", stdout=out)
    text = out.getvalue()
    assert "would delete 3 agents_app.Thread" in text
    assert "would delete 12 agents_app.Message" in text
    # The old threads' 6 logs, and the recent thread's 5 past 60 days (not counted twice).
    assert "would delete 11 agents_app.Log" in text
    assert "would trim the bodies of 3 logs" in text
    assert Thread.objects.count() == 4 and Log.objects.count() == 14
    assert not Log.objects.filter(request_body__isnull=True).exists()
    assert RetentionPolicy.objects.get().last_run_at is None
    # What it predicted is what a real run then does.
    dry = retention_apply(dry_run=True)
    real = retention_apply()
    assert (real.deleted, real.log_bodies_trimmed) == (dry.deleted, dry.log_bodies_trimmed)


def test_a_run_that_runs_out_of_time_is_continued_by_the_next(policy: Any) -> None:
    agent = make_agent()
    recent = make_threads(agent, 1, idle_days=1)
    fill(recent, messages=0, logs={30: 2500}, values=0)
    first = retention_apply(batch=1000, max_seconds=0, now=NOW)
    assert not first.finished and first.log_bodies_trimmed == 0
    second = retention_apply(batch=1000, now=NOW)
    assert second.finished and second.log_bodies_trimmed == 2500
    row = RetentionPolicy.objects.get()
    assert row.log_bodies_trimmed_before == int(ago(7).timestamp() * 1_000_000)
    assert not Log.objects.filter(request_body__isnull=False).exists()
    assert "trimmed the bodies of 2500 logs" in row.last_run_summary


def test_deleted_threads_are_announced_to_live_thread_lists(policy: Any, alice: Any) -> None:
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from agents_app.broadcast.events import REGISTRY_ALL, registry_user_group

    policy.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    agent = make_agent()
    old = make_threads(agent, 2, idle_days=100)
    Thread.objects.filter(pk=old[0].pk).update(owner=alice)
    layer = get_channel_layer()
    staff_list = async_to_sync(layer.new_channel)()
    alice_list = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(REGISTRY_ALL, staff_list)
    async_to_sync(layer.group_add)(registry_user_group(alice.pk), alice_list)

    retention_apply()

    def frames(channel: str, n: int) -> set[str]:
        got = [async_to_sync(layer.receive)(channel)["frame"] for _ in range(n)]
        assert {f["type"] for f in got} == {"thread_deleted"}
        return {f["threadId"] for f in got}

    assert frames(staff_list, 2) == {str(t.pk) for t in old}
    assert frames(alice_list, 1) == {str(old[0].pk)}


def test_rows_that_point_at_themselves_or_in_a_loop_are_deleted_once(policy: Any) -> None:
    agent = make_agent()
    (thread,) = make_threads(agent, 1, idle_days=100)
    a, b, c = (
        Message.objects.create(thread=thread, role="user", content=x, created_at=i)
        for i, x in enumerate("abc")
    )
    # Message.parent has no database constraint: nothing stops a loop but this code.
    Message.objects.filter(pk=a.pk).update(parent=a)
    Message.objects.filter(pk=b.pk).update(parent=c)
    Message.objects.filter(pk=c.pk).update(parent=b)
    report = retention_apply(batch=1)
    assert not Thread.objects.exists() and not Message.objects.exists()
    assert report.deleted["agents_app.Message"] == 3
