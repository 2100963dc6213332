"""Schedule lateness on real processes: beat, two workers, many interval schedules.

    .venv/bin/python bench/schedules_bench.py [--schedules 40] [--interval 2] [--seconds 50]
        [--workers 2] [--smoke]

Starts the integration stack without its web server, which schedules do not need
(PostgreSQL database, a private Redis, beat and ``--workers`` Celery workers, default schedule
settings), inserts ``--schedules`` interval schedules of the seeded ``greeter`` agent due
from a few seconds from now, lets them run for ``--seconds``, pauses them, and reports per
run: claim − due and started (thread created, message posted) − due, p50/p99/max, and whether
any due time ran twice or was skipped.
``--smoke`` (the test suite's): two schedules every second for a second on one worker,
the first due a second after beat's first tick.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.effects_stack import EffectsStack  # noqa: E402
from tests.integration.stack import wait_until  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=40)
    parser.add_argument("--interval", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args()
    # Seconds from the insert to the first due time: beat and the workers are ready by then.
    lead = 5
    if args.smoke:
        args.schedules, args.interval, args.seconds, args.workers, lead = 2, 1, 1, 1, 1
    stack = EffectsStack(Path(tempfile.mkdtemp(prefix="schedules-bench-")))
    try:
        stack.redis.start()
        stack.create_database()
        # All start at once (each start is mostly imports); no schedule is due before all are up.
        workers = [stack.worker(f"w{n + 1}") for n in range(args.workers)]
        beat = stack.beat()
        for worker in workers:
            wait_until(
                lambda w=worker: " ready." in w.log.read_text(errors="replace"),
                f"worker {worker.name} to be ready",
                timeout=60,
            )
        wait_until(
            lambda: "Sending due task schedules-tick" in beat.log.read_text(errors="replace"),
            "beat's first schedules tick",
            timeout=60,
        )
        stack.sql(
            """
            INSERT INTO agents_app_schedule
                (id, name, cron, timezone, interval_seconds, message, env_ciphertext, env_names, attachments,
             target, paused_reason,
                 paused, catch_up, next_run_at, created_at, updated_at, agent_id, owner_id)
            SELECT gen_random_uuid(), 'bench ' || i, '', 'UTC', %s, 'Bench tick', '', '[]', '[]',
                   'new_thread', '', false, 0,
                   date_trunc('second', now()) + %s * interval '1 second'
                     + (i %% %s) * interval '1 second' / %s,
                   now(), now(),
                   (SELECT id FROM agents_app_agent WHERE name = 'greeter'),
                   (SELECT id FROM auth_user WHERE username = 'alice')
            FROM generate_series(0, %s - 1) AS i RETURNING id
            """,
            args.interval,
            lead,
            args.schedules,
            args.schedules,
            args.schedules,
        )
        time.sleep(lead + args.seconds)
        stack.sql_exec("UPDATE agents_app_schedule SET paused = true")
        wait_until(
            lambda: not stack.sql("SELECT 1 FROM agents_app_schedulerun WHERE status = 'claimed'"),
            "claimed runs to start",
            timeout=120,
        )
        rows = stack.sql(
            """
            SELECT extract(epoch FROM claimed_at - due_at), extract(epoch FROM started_at - due_at),
                   status, skipped
            FROM agents_app_schedulerun
            """
        )
        [(dupes,)] = stack.sql(
            "SELECT count(*) FROM (SELECT schedule_id, due_at FROM agents_app_schedulerun"
            " GROUP BY 1, 2 HAVING count(*) > 1) d"
        )
        claim = sorted(float(r[0]) for r in rows)
        start = sorted(float(r[1]) for r in rows if r[1] is not None)
        print(
            f"runs: {len(rows)}, statuses: {sorted({r[2] for r in rows})}, duplicated due times:"
            f" {dupes}, skipped due times: {sum(r[3] for r in rows)}"
        )
        for name, values in (("claim - due", claim), ("started - due", start)):
            print(
                f"{name}: p50 {statistics.median(values) * 1000:.0f} ms, p99"
                f" {_pct(values, 0.99) * 1000:.0f} ms, max {values[-1] * 1000:.0f} ms"
            )
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
