"""Scheduled effects bench: the due-effect query with a big table, and lateness on real workers.

    .venv/bin/python bench/effects_bench.py [--pending 100000] [--effects 3000] [--seconds 60]
                                            [--workers 2] [--smoke]

1. Creates a throw-away PostgreSQL database (``BENCH_POSTGRES_URL``, default the local
   server; a copy of the integration tests' migrated template), and fills ``agents_app_scheduledeffect`` with ``--pending``
   pending runs due over the next day plus as many finished ones (history). Times the
   sweep's queries exactly as ``services.sessions.effects`` sends them (captured from the ORM):
   the due check, the claim's ``SELECT … FOR UPDATE SKIP LOCKED`` (with and without
   due rows) and the recovery query, and prints ``EXPLAIN ANALYZE`` of the claim.
2. Starts a private ``redis-server``, ``--workers`` Celery workers and Celery beat with
   the default effect settings, inserts ``--effects`` runs due evenly over ``--seconds``
   seconds (on top of the big table), and reports lateness: the handler's first
   statement (``clock_timestamp()``) minus the run's due time, p50/p99/max.

Targets: claim query < 5 ms with 100,000 pending runs (index ``effect_due_pending``);
lateness p99 < 1 s. ``--smoke`` (the test suite's): 10 pending runs, 2 timed runs per query,
3 effects due over a second on one worker.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

EFFECT_SOURCE = """
from asgiref.sync import sync_to_async
from django.db import connection

from runtime.tools.registry import define_effect


def _started(effect_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO bench_effect_start (effect_id, started_at) VALUES (%s, clock_timestamp())"
            " ON CONFLICT DO NOTHING",
            [effect_id],
        )


async def bench_effect(state, args):
    await sync_to_async(_started)(state.context["effect_id"])


bench = define_effect("Record when the handler started", None, bench_effect, name="bench")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p50 = statistics.median(values)
    p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
    return f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {values[-1]:.2f} ms (n={len(values)})"


# --- setup ------------------------------------------------------------------------------------


def create_database(admin_url: str) -> str:
    """A new database, a copy of the migrated template (migrating from zero took seconds)."""
    import psycopg

    from tests.integration.stack import migrated_template

    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "studio.settings"}
    template = migrated_template(env)
    name = f"bench_effects_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return f"{admin_url.rsplit('/', 1)[0]}/{name}"


def drop_database(admin_url: str, url: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def seed(pending: int) -> str:
    """A thread of a ``test``-provider agent, ``pending`` future runs and as much history."""
    from django.db import connection

    from agents_app.models import Agent, Thread
    from agents_app.services.definitions.saves import save_definitions
    from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig

    model = ModelDefinition(name="bench-model", provider="test", model="x")
    prompt = PromptDefinition(name="bench-prompt", model="bench-model", prompt="hi")
    agent = AgentDefinition(name="bench", side_a=SideConfig(prompt="bench-prompt"))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )
    row = Agent.objects.get(name="bench")
    thread = Thread.objects.create(agent=row, origin_agent=row)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO agents_app_scheduledeffect
                (id, thread_id, name, args, due_at, status, attempts, max_attempts, error,
                 claimed_by, manual_run, created_at, updated_at, completed_at)
            SELECT gen_random_uuid(), %s, 'bench', jsonb_build_object('i', i),
                   now() + interval '1 minute' + i * interval '1 second' * 86400 / %s,
                   'pending', 0, 3, '', '', false, now(), now(), NULL
            FROM generate_series(1, %s) AS i
            UNION ALL
            SELECT gen_random_uuid(), %s, 'bench', jsonb_build_object('i', i),
                   now() - interval '1 day' + i * interval '1 second', 'completed', 1, 3, '',
                   '', false, now(), now(), now()
            FROM generate_series(1, %s) AS i
            """,
            [thread.pk, pending, pending, thread.pk, pending],
        )
        cursor.execute(
            "CREATE TABLE bench_effect_start (effect_id uuid PRIMARY KEY,"
            " started_at timestamptz NOT NULL)"
        )
        cursor.execute("ANALYZE agents_app_scheduledeffect")
    return str(thread.pk)


# --- part 1: queries --------------------------------------------------------------------------


def captured_sql(fn: Any) -> list[str]:
    """The SQL ``fn`` sends, inside a transaction that is rolled back."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx, transaction.atomic():
        fn()
        transaction.set_rollback(True)
    return [q["sql"] for q in ctx.captured_queries if q["sql"].startswith(("SELECT", "UPDATE"))]


def time_sql(sql: str, runs: int) -> list[float]:
    from django.db import connection, transaction

    times = []
    for _ in range(runs):
        with transaction.atomic():
            with connection.cursor() as cursor:
                started = time.perf_counter()
                cursor.execute(sql)
                cursor.fetchall()
                times.append((time.perf_counter() - started) * 1000)
            transaction.set_rollback(True)
    return times


def explain(sql: str) -> str:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        plan = "\n".join(r[0] for r in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


def query_bench(thread_id: str, runs: int) -> None:
    from django.db import connection

    from agents_app.services.sessions import effects as svc

    [exists_sql] = captured_sql(svc.effects_due_exist)
    claim_sqls = captured_sql(lambda: svc.effects_claim(owner="bench", limit=50))
    select_sql = claim_sqls[0]  # the claim's SELECT … FOR UPDATE SKIP LOCKED (nothing due)
    recover_sql = captured_sql(lambda: svc.effects_recover(stale_seconds=60))[0]
    print("claim query:", select_sql)
    print(f"due check, nothing due:    {_ms(time_sql(exists_sql, runs))}")
    print("EXPLAIN ANALYZE of the due check:\n" + explain(exists_sql))
    print(f"claim SELECT, nothing due: {_ms(time_sql(select_sql, runs))}")
    print(f"recovery query:            {_ms(time_sql(recover_sql, runs))}")
    scans = [line.strip() for line in explain(recover_sql).splitlines() if "Scan" in line]
    print("recovery plan:", *scans)
    with connection.cursor() as cursor:  # 1,000 runs due now, as after an outage
        cursor.execute(
            "UPDATE agents_app_scheduledeffect SET due_at = now() - interval '1 second'"
            " WHERE id IN (SELECT id FROM agents_app_scheduledeffect WHERE status = 'pending'"
            " ORDER BY due_at LIMIT 1000)"
        )
        cursor.execute("ANALYZE agents_app_scheduledeffect")
    select_due = captured_sql(lambda: svc.effects_claim(owner="bench", limit=50))[0]
    print(f"claim SELECT, 1,000 due:   {_ms(time_sql(select_due, runs))}")
    print("EXPLAIN ANALYZE of the claim with 1,000 due:\n" + explain(select_due))
    with connection.cursor() as cursor:  # put them back in the future for part 2
        cursor.execute(
            "UPDATE agents_app_scheduledeffect SET due_at = now() + interval '2 days'"
            " WHERE status = 'pending' AND due_at <= now()"
        )


# --- part 2: lateness on real workers -------------------------------------------------------


class Processes:
    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp, self.env = tmp, env
        self.running: list[subprocess.Popen[bytes]] = []

    def spawn(self, name: str, args: list[str]) -> None:
        log = (self.tmp / f"{name}.log").open("ab")
        self.running.append(
            subprocess.Popen(
                args,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def wait_log(self, name: str, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in (self.tmp / f"{name}.log").read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not log {text!r}; see {self.tmp}")
            time.sleep(0.2)

    def stop(self) -> None:
        for popen in reversed(self.running):
            if popen.poll() is None:
                os.killpg(popen.pid, signal.SIGTERM)
        for popen in self.running:
            try:
                popen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(popen.pid, signal.SIGKILL)


def lateness_bench(
    url: str,
    thread_id: str,
    effects: int,
    seconds: float,
    workers: int,
    lead: float = 2,
    poll: float = 1,
) -> None:
    """Part 2; ``lead``: seconds from the insert to the first due time, ``poll``: how often
    the bench looks whether every run is done."""
    from django.db import connection

    tmp = Path(tempfile.mkdtemp(prefix="effects-bench-"))
    (tmp / "project" / "agents" / "effects").mkdir(parents=True)
    (tmp / "project" / "agents" / "effects" / "bench.py").write_text(EFFECT_SOURCE)
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "DATABASE_URL": url,
        "REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "STUDIO_EXECUTOR": "celery",
        "STUDIO_AGENTS_DIRS": f"{ROOT / 'agents'},{tmp / 'project'}",
        "STUDIO_VAR_DIR": str(tmp / "var"),
        "CELERY_WORKER_CONCURRENCY": "8",
        "LOG_LEVEL": "WARNING",
    }
    env.pop("TEST_DB_NAME", None)
    procs = Processes(tmp, env)
    try:
        redis = shutil.which("redis-server") or "redis-server"
        procs.spawn("redis", [redis, "--port", str(port), "--save", "", "--appendonly", "no"])
        names = [f"w{n + 1}" for n in range(workers)]
        for name in names:
            procs.spawn(
                name,
                [str(BIN / "celery"), "-A", "studio", "worker", "-n", f"{name}@%h", "-l", "INFO"]
                + ["--without-gossip", "--without-mingle"],
            )
        beat_schedule = str(tmp / "beat-schedule")
        procs.spawn(
            "beat", [str(BIN / "celery"), "-A", "studio", "beat", "-s", beat_schedule, "-l", "INFO"]
        )
        # All start at once (each start is mostly imports); no run is due before all are up.
        for name in names:
            procs.wait_log(name, " ready.")
        procs.wait_log("beat", "Sending due task effects-tick")
        step_ms = seconds * 1000 / effects
        with connection.cursor() as cursor:
            cursor.execute(
                """
                INSERT INTO agents_app_scheduledeffect
                    (id, thread_id, name, args, due_at, status, attempts, max_attempts, error,
                     claimed_by, manual_run, created_at, updated_at)
                SELECT gen_random_uuid(), %s, 'bench', NULL,
                       clock_timestamp() + %s * interval '1 second'
                         + i * %s * interval '1 millisecond',
                       'pending', 0, 3, '', '', false, now(), now()
                FROM generate_series(0, %s - 1) AS i
                """,
                [thread_id, lead, step_ms, effects],
            )
        deadline = time.monotonic() + seconds + 60
        while time.monotonic() < deadline:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM agents_app_scheduledeffect WHERE name = 'bench'"
                    " AND status IN ('pending', 'processing') AND due_at < now() + interval '1 h'"
                )
                if cursor.fetchone()[0] == 0:
                    break
            time.sleep(poll)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT extract(epoch FROM s.started_at - e.due_at) * 1000,"
                " extract(epoch FROM e.started_at - e.due_at) * 1000"
                " FROM bench_effect_start s JOIN agents_app_scheduledeffect e"
                " ON e.id = s.effect_id"
            )
            rows = cursor.fetchall()
        print(f"ran {len(rows)} of {effects} effects due over {seconds:.0f} s on {workers} workers")
        print(f"lateness, handler start - due: {_ms([float(r[0]) for r in rows])}")
        print(f"lateness, claim - due:         {_ms([float(r[1]) for r in rows])}")
    finally:
        procs.stop()
        if os.environ.get("BENCH_KEEP_LOGS"):
            print(f"logs: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--effects", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=200, help="timed runs per query")
    parser.add_argument("--skip-workers", action="store_true", help="only the query bench")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    options = parser.parse_args()
    if options.smoke:
        options.pending, options.effects, options.seconds = 10, 3, 1
        options.workers, options.runs = 1, 2
    admin = os.environ.get("BENCH_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres")
    url = create_database(admin)
    try:
        os.environ["DATABASE_URL"] = url
        os.environ.pop("REDIS_URL", None)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
        import django

        django.setup()
        thread_id = seed(options.pending)
        print(f"table: {options.pending:,} pending runs + {options.pending:,} finished")
        query_bench(thread_id, options.runs)
        if not options.skip_workers:
            lead, poll = (0.5, 0.2) if options.smoke else (2, 1)
            lateness_bench(
                url, thread_id, options.effects, options.seconds, options.workers, lead, poll
            )
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(admin, url)


if __name__ == "__main__":
    main()
