"""A schedule every 2 s on a real Celery beat and two workers runs exactly once per due time
through a worker ``kill -9`` and a beat restart (docs/automation.md, "Schedules").

Each run is a thread with the schedule's message; "exactly once" is one run row, one
thread and one posted message per due time, with no due time missing between the first
and the last (catch-up covers the due times that fell while beat was down).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import pytest

from tests.integration.effects_stack import EffectsStack
from tests.integration.stack import wait_until

pytestmark = pytest.mark.integration

INTERVAL = 2


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EffectsStack]:
    running = EffectsStack(tmp_path_factory.mktemp("schedules"))
    running.env.update({"STUDIO_SCHEDULE_STALE_SECONDS": "3", "STUDIO_SCHEDULE_POLL_MS": "100"})
    running.start()
    try:
        yield running
    finally:
        running.stop()


def _create(stack: EffectsStack) -> str:
    [(schedule_id,)] = stack.sql(
        """
        INSERT INTO agents_app_schedule
            (id, name, cron, timezone, interval_seconds, message, env_ciphertext, env_names, attachments,
             target, paused_reason,
             paused, catch_up, next_run_at, created_at, updated_at, agent_id, owner_id,
             standing_thread_id)
        SELECT gen_random_uuid(), 'every 2 s', '', 'UTC', %s, 'Tick report', '', '[]', '[]', 'new_thread', '',
               false, 100, date_trunc('second', now()) + interval '3 seconds', now(), now(),
               (SELECT id FROM agents_app_agent WHERE name = 'greeter'),
               (SELECT id FROM auth_user WHERE username = 'alice'), NULL
        RETURNING id::text
        """,
        INTERVAL,
    )
    return str(schedule_id)


def _started(stack: EffectsStack, schedule_id: str) -> int:
    [(count,)] = stack.sql(
        "SELECT count(*) FROM agents_app_schedulerun WHERE schedule_id = %s AND status = 'started'",
        schedule_id,
    )
    return int(count)


def test_a_schedule_runs_exactly_once_per_due_time_through_a_kill_and_a_beat_restart(
    stack: EffectsStack,
) -> None:
    workers = {"w1": stack.ready_worker("w1"), "w2": stack.ready_worker("w2")}
    beat = stack.beat()
    schedule_id = _create(stack)
    events = []

    def reach(count: int) -> None:
        wait_until(lambda: _started(stack, schedule_id) >= count, f"{count} runs", timeout=60)

    reach(3)
    workers["w1"].kill_hard()
    events.append(f"kill -9 w1 after {_started(stack, schedule_id)} runs")
    reach(5)
    workers["w1"] = stack.ready_worker("w1")
    beat.kill_hard()
    events.append(f"beat killed after {_started(stack, schedule_id)} runs")
    # A due time falls and stays unclaimed for an interval: no beat, no sweep.
    wait_until(
        lambda: stack.sql(
            "SELECT 1 FROM agents_app_schedule WHERE id = %s"
            " AND next_run_at < now() - interval '2 seconds'",
            schedule_id,
        ),
        "a due time to be missed",
        timeout=30,
    )
    beat = stack.beat()
    events.append("beat restarted")
    reach(_started(stack, schedule_id) + 3)
    stack.sql_exec("UPDATE agents_app_schedule SET paused = true WHERE id = %s", schedule_id)
    wait_until(
        lambda: (
            not stack.sql("SELECT 1 FROM agents_app_schedulerun WHERE status = 'claimed' LIMIT 1")
        ),
        "claimed runs to start",
        timeout=30,
    )
    rows = stack.sql(
        """
        SELECT r.due_at, r.status, r.thread_id::text,
               extract(epoch FROM r.started_at - r.due_at),
               (SELECT count(*) FROM agents_app_message m WHERE m.thread_id = r.thread_id
                  AND m.role = 'user' AND m.content = 'Tick report')
             + (SELECT count(*) FROM agents_app_queuedmessage q WHERE q.thread_id = r.thread_id
                  AND q.content = 'Tick report')
        FROM agents_app_schedulerun r WHERE r.schedule_id = %s ORDER BY r.due_at
        """,
        schedule_id,
    )
    dues = [r[0] for r in rows]
    steps = {(b - a).total_seconds() for a, b in zip(dues, dues[1:], strict=False)}
    assert steps == {float(INTERVAL)}, (events, dues)  # none missing, none twice
    assert {r[1] for r in rows} == {"started"}
    assert len({r[2] for r in rows}) == len(rows)  # one thread per due time
    assert {r[4] for r in rows} == {1}  # one message per thread
    [(threads,)] = stack.sql(
        "SELECT count(*) FROM agents_app_thread WHERE tags::text LIKE '%%schedule-run-%%'"
    )
    assert threads == len(rows)  # no orphan thread from the killed worker
    late = sorted(float(r[3]) for r in rows)
    print(
        f"\n{events}\nruns: {len(rows)}; lateness (started - due): p50"
        f" {statistics.median(late) * 1000:.0f} ms, max {late[-1] * 1000:.0f} ms"
    )
