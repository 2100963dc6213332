"""Fault test: 2,000 effects due over about a minute, two Celery workers killed with ``kill -9``
(and restarted) several times, the Redis broker restarted once. Every effect must run
exactly once, none may be lost, and none of the 200 canceled ones may run.

"Ran" is what the handler did: its idempotent side effect is one row per run id in
``effect_side_log``, and ``runs`` counts handler entries. A worker killed between the
handler's write and the completion write makes the recovered run enter the handler
again (at-least-once execution, which is why handlers get their run id); that can
only happen to a run whose claim was lost, so ``runs <= attempts`` for every run and
``runs == 1`` for every run that was claimed once.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.effects_stack import EffectsStack
from tests.integration.stack import Process, wait_until

pytestmark = pytest.mark.integration

TOTAL, CANCELED, THREADS = 2000, 200, 10
SPREAD_MS, LEAD_MS = 60_000, 3_000
# Each handler takes this long, so a few runs are always in flight when a worker is killed.
HANDLER_SECONDS = 0.2


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EffectsStack]:
    running = EffectsStack(tmp_path_factory.mktemp("effects-fault"))
    # A run may be caught by several kills; failures are not expected here.
    running.env["STUDIO_EFFECT_MAX_ATTEMPTS"] = "10"
    running.start()
    running.beat()
    try:
        yield running
    finally:
        running.stop()


def _threads(stack: EffectsStack) -> list[str]:
    client = stack.client("alice")
    ids = []
    for _ in range(THREADS):
        response = client.post("/api/threads", json={"agent_id": "greeter"})
        assert response.status_code == 200, response.text
        ids.append(str(response.json()["threadId"]))
    return ids


def _schedule_all(stack: EffectsStack, threads: list[str]) -> list[tuple[str, str, int]]:
    """2,000 pending runs due from LEAD_MS to LEAD_MS + SPREAD_MS from now (one INSERT)."""
    step = SPREAD_MS / TOTAL
    rows = stack.sql(
        """
        INSERT INTO agents_app_scheduledeffect
            (id, thread_id, name, args, due_at, status, attempts, max_attempts, error,
             claimed_by, manual_run, created_at, updated_at)
        SELECT gen_random_uuid(), (%s::uuid[])[1 + i %% %s], 'record',
               jsonb_build_object('i', i, 'sleep', %s),
               clock_timestamp() + (%s + i * %s) * interval '1 millisecond',
               'pending', 0, 10, '', '', false, now(), now()
        FROM generate_series(0, %s - 1) AS i
        RETURNING id::text, thread_id::text, (args->>'i')::int
        """,
        threads,
        THREADS,
        HANDLER_SECONDS,
        LEAD_MS,
        step,
        TOTAL,
    )
    return sorted(rows, key=lambda r: r[2])


def _cancel_some(stack: EffectsStack, runs: list[tuple[str, str, int]]) -> set[str]:
    """Cancel 200 runs due at least 23 s from now, through the API (8 at a time)."""
    later = [r for r in runs if r[2] >= TOTAL // 3]
    chosen = random.Random(8).sample(later, CANCELED)

    def cancel(run: tuple[str, str, int]) -> int:
        effect_id, thread_id, _ = run
        with stack.client("alice") as client:
            url = f"/api/threads/{thread_id}/effects/{effect_id}/cancel"
            return client.post(url).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(cancel, chosen)) == {200}
    return {r[0] for r in chosen}


def _chaos(stack: EffectsStack, workers: dict[str, Process], t0: float) -> list[str]:
    """Kill a worker with ``kill -9`` every 10 s (restarted 2 s later); restart Redis once."""
    plan = [
        (8, "kill", "w1"),
        (10, "start", "w1"),
        (18, "kill", "w2"),
        (20, "start", "w2"),
        (30, "redis", ""),
        (40, "kill", "w1"),
        (42, "start", "w1"),
        (50, "kill", "w2"),
        (52, "start", "w2"),
    ]
    done = []
    for at, action, name in plan:
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        if action == "kill":
            workers[name].kill_hard()
        elif action == "start":
            workers[name] = stack.worker(name)
        else:
            stack.redis.restart(down_for=2.0)
        done.append(f"{time.monotonic() - t0:5.1f}s {action} {name}".rstrip())
    return done


def test_every_effect_runs_exactly_once_through_kills_and_a_redis_restart(
    stack: EffectsStack,
) -> None:
    workers = {"w1": stack.ready_worker("w1"), "w2": stack.ready_worker("w2")}
    threads = _threads(stack)
    t0 = time.monotonic()
    runs = _schedule_all(stack, threads)
    assert len(runs) == TOTAL
    canceled = _cancel_some(stack, runs)
    events = _chaos(stack, workers, t0)
    wait_until(
        lambda: (
            not stack.sql(
                "SELECT 1 FROM agents_app_scheduledeffect WHERE status IN ('pending', 'processing')"
                " LIMIT 1"
            )
        ),
        "every effect to finish",
        timeout=90,
        interval=0.5,
    )
    rows = stack.sql(
        """
        SELECT e.id::text, e.status, e.attempts, s.runs,
               extract(epoch FROM s.first_ran_at - e.due_at)
        FROM agents_app_scheduledeffect e LEFT JOIN effect_side_log s ON s.effect_id = e.id
        """
    )
    by_status: dict[str, int] = {}
    for _, status, *_rest in rows:
        by_status[status] = by_status.get(status, 0) + 1
    assert by_status == {"completed": TOTAL - CANCELED, "user_canceled": CANCELED}, by_status
    ran = {r[0]: r for r in rows if r[3] is not None}
    assert not canceled & set(ran), "a canceled effect ran"
    assert set(ran) == {r[0] for r in runs} - canceled, "an effect never ran"  # none lost
    # Exactly once: one side-effect row per run; re-entries only after a lost claim.
    assert all(runs_ <= attempts for _, _, attempts, runs_, _ in ran.values())
    assert all(runs_ == 1 for _, _, attempts, runs_, _ in ran.values() if attempts == 1)
    reentered = sum(1 for r in ran.values() if r[3] > 1)
    recovered = sum(1 for r in ran.values() if r[2] > 1)
    lateness = sorted(float(r[4]) for r in ran.values() if r[2] == 1)
    p50 = statistics.median(lateness)
    p99 = lateness[int(0.99 * (len(lateness) - 1))]
    print(  # shown with -s; the numbers the report quotes
        f"\nchaos: {events}\nrecovered runs: {recovered}, handler re-entries: {reentered}"
        f"\nlateness of runs claimed once: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms,"
        f" max {lateness[-1] * 1000:.0f} ms\n{_lateness_by_due_time(stack)}"
    )
    assert reentered <= recovered


def _lateness_by_due_time(stack: EffectsStack) -> str:
    """Worst lateness of the first run per 5 s of due time (where the faults hurt)."""
    rows = stack.sql(
        """
        SELECT floor(extract(epoch FROM e.due_at - min(e.due_at) OVER ()) / 5) * 5 AS bucket,
               extract(epoch FROM s.first_ran_at - e.due_at) AS late
        FROM agents_app_scheduledeffect e JOIN effect_side_log s ON s.effect_id = e.id
        """
    )
    worst: dict[int, float] = {}
    for bucket, late in rows:
        worst[int(bucket)] = max(worst.get(int(bucket), 0.0), float(late))
    return "worst lateness by due time: " + ", ".join(
        f"{b}s:{worst[b] * 1000:.0f}ms" for b in sorted(worst)
    )
