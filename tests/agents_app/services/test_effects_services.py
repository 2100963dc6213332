"""Effect runs in the database: claims, outcomes, retries, recovery, cancel, run now, the sweep.

The sweep is driven directly (``drain_for``); handlers run on the engine over
``DjangoStore``. Frames are read from the in-memory channel layer.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, connections, transaction
from django.utils import timezone

from agents_app.base.errors import Conflict
from agents_app.models import ScheduledEffect, Thread, ThreadValue
from agents_app.orchestration.effect_runner import Sweeper, drain_for, effect_run
from agents_app.services.sessions import effects as svc
from tests.agents_app.bridge.effects_support import *  # noqa: F403  (fixtures)
from tests.agents_app.bridge.effects_support import Frames, flaky_failures, make_effect

pytestmark = pytest.mark.django_db(transaction=True)


def _row(effect: ScheduledEffect) -> ScheduledEffect:
    return ScheduledEffect.objects.get(pk=effect.pk)


# --- claims --------------------------------------------------------------------------------------


def test_a_claim_takes_due_pending_runs_oldest_first(thread: Thread, effects: Any) -> None:
    older = make_effect(thread, in_s=-10)
    newer = make_effect(thread, in_s=-1)
    make_effect(thread, in_s=3600)  # not due
    make_effect(thread, status="user_canceled")  # never runs
    claimed = svc.effects_claim(owner="w1", limit=10)
    assert [r.pk for r in claimed] == [older.pk, newer.pk]
    row = _row(older)
    assert (row.status, row.claimed_by, row.attempts) == ("processing", "w1", 1)
    assert row.heartbeat_at is not None and row.started_at is not None
    assert svc.effects_claim(owner="w2", limit=10) == []  # a duplicate tick finds nothing


def test_the_claim_limit_is_respected(thread: Thread, effects: Any) -> None:
    for _ in range(5):
        make_effect(thread)
    assert len(svc.effects_claim(owner="w1", limit=2)) == 2
    assert len(svc.effects_claim(owner="w2", limit=10)) == 3


def test_concurrent_claimers_skip_locked_rows(thread: Thread, effects: Any) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED needs PostgreSQL")
    rows = [make_effect(thread, in_s=-10 + i) for i in range(4)]
    locked, release = threading.Event(), threading.Event()

    def hold_first_two() -> None:
        with transaction.atomic():
            ids = [r.pk for r in rows[:2]]
            list(ScheduledEffect.objects.select_for_update().filter(pk__in=ids))
            locked.set()
            release.wait(10)
        connections.close_all()

    holder = threading.Thread(target=hold_first_two)
    holder.start()
    try:
        assert locked.wait(10)
        claimed = svc.effects_claim(owner="w1", limit=10)  # does not wait for the lock
        assert [r.pk for r in claimed] == [rows[2].pk, rows[3].pk]
    finally:
        release.set()
        holder.join(10)
    assert [r.pk for r in svc.effects_claim(owner="w2", limit=10)] == [rows[0].pk, rows[1].pk]


# --- outcomes ------------------------------------------------------------------------------------


def test_finishing_is_guarded_by_the_claim(thread: Thread, effects: Any) -> None:
    effect = make_effect(thread)
    [row] = svc.effects_claim(owner="w1", limit=1)
    assert svc.effect_finish(row=row, owner="someone-else") is None
    assert _row(effect).status == "processing"
    done = svc.effect_finish(row=row, owner="w1")
    assert done is not None and _row(effect).status == "completed"
    assert _row(effect).completed_at is not None and _row(effect).claimed_by == ""
    assert svc.effect_finish(row=row, owner="w1") is None  # finished once only


def test_a_failure_is_retried_with_backoff_then_failed(
    thread: Thread, effects: Any, settings: Any
) -> None:
    settings.STUDIO_EFFECT_RETRY_BASE_MS = 10_000
    effect = make_effect(thread, max_attempts=3)
    delays = []
    for attempt in (1, 2):
        ScheduledEffect.objects.filter(pk=effect.pk).update(due_at=timezone.now())
        [row] = svc.effects_claim(owner="w", limit=1)
        before = timezone.now()
        svc.effect_finish(row=row, owner="w", error=f"RuntimeError: try {attempt}")
        current = _row(effect)
        assert (current.status, current.attempts, current.error) == (
            "pending",
            attempt,
            f"RuntimeError: try {attempt}",
        )
        delays.append(round((current.due_at - before).total_seconds()))
    assert delays == [10, 20]
    ScheduledEffect.objects.filter(pk=effect.pk).update(due_at=timezone.now())
    [row] = svc.effects_claim(owner="w", limit=1)
    svc.effect_finish(row=row, owner="w", error="RuntimeError: try 3")
    final = _row(effect)
    assert (final.status, final.attempts, final.error) == ("failed", 3, "RuntimeError: try 3")
    assert final.completed_at is not None


def test_permanent_errors_and_manual_runs_are_not_retried(thread: Thread, effects: Any) -> None:
    first, second = make_effect(thread), make_effect(thread)
    rows = {r.pk: r for r in svc.effects_claim(owner="w", limit=2)}
    svc.effect_finish(row=rows[first.pk], owner="w", error="Effect not found: x", permanent=True)
    svc.effect_finish(row=rows[second.pk], owner="w", error="RuntimeError: boom", retry=False)
    assert [_row(e).status for e in (first, second)] == ["failed", "failed"]


def test_heartbeats_refresh_only_the_owners_runs(thread: Thread, effects: Any) -> None:
    mine, theirs = make_effect(thread), make_effect(thread)
    svc.effects_claim(owner="me", limit=1)
    svc.effects_claim(owner="them", limit=1)
    old = timezone.now() - timedelta(minutes=5)
    ScheduledEffect.objects.update(heartbeat_at=old)
    assert svc.effects_heartbeat(owner="me") == 1
    refreshed = _row(mine).heartbeat_at
    assert refreshed is not None and refreshed > old and _row(theirs).heartbeat_at == old


def test_runs_of_a_dead_worker_are_recovered(thread: Thread, effects: Any) -> None:
    retry = make_effect(thread, max_attempts=3)
    exhausted = make_effect(thread, max_attempts=1)
    alive = make_effect(thread)
    svc.effects_claim(owner="dead", limit=3)
    stale = timezone.now() - timedelta(seconds=120)
    ScheduledEffect.objects.exclude(pk=alive.pk).update(heartbeat_at=stale)
    recovered = svc.effects_recover(stale_seconds=60)
    assert {r.pk for r in recovered} == {retry.pk, exhausted.pk}
    assert (_row(retry).status, _row(retry).claimed_by) == ("pending", "")
    assert (_row(exhausted).status, _row(exhausted).error) == ("failed", svc.LOST_TEXT)
    assert _row(alive).status == "processing"
    [again] = svc.effects_claim(owner="new", limit=5)  # the recovered run is due again
    assert (again.pk, again.attempts) == (retry.pk, 2)


# --- cancel --------------------------------------------------------------------------------------


def test_cancel_only_touches_pending_runs(thread: Thread, effects: Any, frames: Frames) -> None:
    effect = make_effect(thread, in_s=60)
    assert svc.effect_cancel(effect=effect) == {
        "action": "canceled",
        "id": str(effect.pk),
        "canceledBy": "user",
    }
    assert _row(effect).status == "user_canceled" and _row(effect).completed_at is not None
    assert frames.statuses(effect.pk) == ["user_canceled"]
    with pytest.raises(Conflict, match=f"No pending effect found for ID {effect.pk}"):
        svc.effect_cancel(effect=effect)
    running = make_effect(thread)
    svc.effects_claim(owner="w", limit=1)
    with pytest.raises(Conflict):
        svc.effect_cancel(effect=running)


# --- the sweep -----------------------------------------------------------------------------------


def test_the_sweep_runs_due_effects_with_their_args(
    thread: Thread, effects: Any, frames: Frames
) -> None:
    due = make_effect(thread, args={"text": "now"})
    later = make_effect(thread, in_s=3600, args={"text": "later"})
    canceled = make_effect(thread, args={"text": "never"})
    svc.effect_cancel(effect=canceled)
    assert drain_for(0.2) == 1
    assert effects == [{"name": "note", "text": "now", "effect_id": str(due.pk)}]
    assert _row(due).status == "completed" and _row(later).status == "pending"
    assert _row(canceled).status == "user_canceled"
    assert ThreadValue.objects.get(thread=thread, key=f"note:{due.pk}").value == "now"
    assert frames.statuses(due.pk) == ["processing", "completed"]


def test_the_sweep_retries_a_failing_effect_until_it_succeeds(
    thread: Thread, effects: Any, frames: Frames
) -> None:
    flaky_failures["left"] = 2
    effect = make_effect(thread, "flaky", max_attempts=3)
    drain_for(1.5)  # retries after 100 ms, then 200 ms
    row = _row(effect)
    assert (row.status, row.attempts, row.error) == ("completed", 3, "")
    assert len(effects) == 3
    assert frames.statuses(effect.pk) == [
        "processing",
        "pending",
        "processing",
        "pending",
        "processing",
        "completed",
    ]


def test_the_sweep_records_the_final_error(thread: Thread, effects: Any) -> None:
    flaky_failures["left"] = 5
    effect = make_effect(thread, "flaky", max_attempts=2)
    ghost = make_effect(thread, "ghost")
    bad = make_effect(thread, args={"wrong": 1})
    drain_for(1.0)
    assert (_row(effect).status, _row(effect).attempts) == ("failed", 2)
    assert _row(effect).error == "RuntimeError: not yet"
    assert (_row(ghost).status, _row(ghost).error) == ("failed", "Effect not found: ghost")
    assert _row(bad).status == "failed" and _row(bad).attempts == 1
    assert _row(bad).error.startswith("Effect note args validation failed: text")


def test_a_handler_over_its_time_limit_fails_the_attempt(
    thread: Thread, effects: Any, settings: Any
) -> None:
    settings.STUDIO_EFFECT_TIMEOUT_SECONDS = 1
    effect = make_effect(thread, "slow", args={"seconds": 30}, max_attempts=1)
    drain_for(0.1)
    assert (_row(effect).status, _row(effect).error) == (
        "failed",
        "TimeoutError: ran longer than 1 s",
    )


def test_a_run_whose_claim_was_taken_over_records_nothing(thread: Thread, effects: Any) -> None:
    effect = make_effect(thread)
    [row] = svc.effects_claim(owner="slowpoke", limit=1)
    # Declared dead meanwhile: recovered and claimed by another worker.
    ScheduledEffect.objects.filter(pk=effect.pk).update(claimed_by="rescuer", attempts=2)

    async def run() -> Any:
        from agents_app.broadcast.events import LiveSink
        from agents_app.orchestration.engines import build_engine

        sink = LiveSink()
        return await Sweeper("slowpoke", sink, build_engine(sink=sink)).run(row)

    assert async_to_sync(run)() is None
    assert (_row(effect).status, _row(effect).claimed_by) == ("processing", "rescuer")


# --- run now and replay --------------------------------------------------------------------------


def test_run_now_runs_a_pending_effect_in_the_request(
    thread: Thread, effects: Any, frames: Frames
) -> None:
    effect = make_effect(thread, in_s=3600)
    result = effect_run(effect=effect)
    assert result == {"action": "ran", "id": str(effect.pk), "status": "completed", "error": None}
    row = _row(effect)
    assert (row.status, row.manual_run, row.attempts) == ("completed", True, 1)
    assert row.manual_run_at is not None and len(effects) == 1
    assert frames.statuses(effect.pk) == ["processing", "completed"]
    with pytest.raises(Conflict):  # nothing to run twice
        effect_run(effect=_row(make_effect(thread, status="processing")))


def test_replay_creates_a_linked_run(thread: Thread, effects: Any) -> None:
    flaky_failures["left"] = 1
    original = make_effect(thread, "flaky", status="failed", error="RuntimeError: old")
    failed = effect_run(effect=original)
    assert failed["action"] == "replayed" and failed["status"] == "failed"
    assert failed["error"] == "RuntimeError: not yet"
    replay = ScheduledEffect.objects.get(pk=failed["replayedId"])
    assert (replay.replayed_from_id, replay.manual_run, replay.args) == (original.pk, True, None)
    again = effect_run(effect=_row(original))
    assert again["status"] == "completed" and again["replayedId"] != failed["replayedId"]
    assert _row(original).status == "failed"  # history is not rewritten
