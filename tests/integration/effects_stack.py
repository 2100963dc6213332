"""A stack for the effect tests: the integration ``Stack`` with its own Redis server, a Celery
beat process, test effects written into a project folder, and a side table in PostgreSQL.

Its own ``redis-server`` (no persistence) so a test may restart it without touching the
shared one. The test effects record every handler entry in ``effect_side_log`` (one row
per run id, ``runs`` counts entries): the idempotent side effect is the row, the counter
shows re-entries after a worker was killed mid-handler.

Also a command line for the stack's environment::

    python -m tests.integration.effects_stack schedule <thread_id> <name> <json args> <delay_ms>

schedules through the engine (``state.schedule_effect``) and prints the run id.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.stack import BIN, ROOT, Process, Stack, free_port, wait_until

EFFECTS_SOURCE = '''
"""Test effects of the integration stack (written by tests/integration/effects_stack.py)."""

import asyncio
import json

from asgiref.sync import sync_to_async
from django.db import connection

from runtime.tools.registry import define_effect


def _log(effect_id, args):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO effect_side_log (effect_id, args, runs, first_ran_at)"
            " VALUES (%s, %s, 1, clock_timestamp())"
            " ON CONFLICT (effect_id) DO UPDATE SET runs = effect_side_log.runs + 1"
            " RETURNING runs",
            [effect_id, json.dumps(args)],
        )
        return cursor.fetchone()[0]


async def record(state, args):
    # ``sleep`` splits around the write: a kill may land before it or after it.
    pause = (args or {}).get("sleep", 0) / 2 if isinstance(args, dict) else 0
    await asyncio.sleep(pause)
    await sync_to_async(_log)(state.context["effect_id"], args)
    await asyncio.sleep(pause)


async def flaky(state, args):
    runs = await sync_to_async(_log)(state.context["effect_id"], args)
    if runs <= args["fail_times"]:
        raise RuntimeError(f"attempt {runs} fails")


async def slow(state, args):
    await sync_to_async(_log)(state.context["effect_id"], args)
    await asyncio.sleep(args["seconds"])


record_effect = define_effect("Record the run in a side table", None, record)
flaky_effect = define_effect("Fail the first fail_times runs", None, flaky)
slow_effect = define_effect("Record, then sleep", None, slow)
'''

SIDE_TABLE = """
CREATE TABLE effect_side_log (
    effect_id uuid PRIMARY KEY,
    args jsonb,
    runs integer NOT NULL,
    first_ran_at timestamptz NOT NULL
)
"""


@dataclass
class RedisServer:
    """A private ``redis-server`` without persistence (a restart loses every queued task)."""

    tmp: Path
    port: int

    def __post_init__(self) -> None:
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = shutil.which("redis-server") or "redis-server"
        log = (self.tmp / "redis.log").open("ab")
        self.popen = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
            + ["no", "--daemonize", "no"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(self.ping, f"redis-server on port {self.port}", timeout=10)

    def ping(self) -> bool:
        import redis

        return bool(redis.Redis(port=self.port, socket_timeout=1).ping())

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(10)
        self.popen = None

    def restart(self, down_for: float = 1.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()


class EffectsStack(Stack):
    """``Stack`` (database, Daphne) plus a private Redis, beat, and the test effects."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.redis = RedisServer(self.tmp, free_port())
        self.redis_url = f"redis://127.0.0.1:{self.redis.port}/0"
        project = self.tmp / "project"
        (project / "agents" / "effects").mkdir(parents=True)
        (project / "agents" / "effects" / "test_effects.py").write_text(EFFECTS_SOURCE)
        self.env.update(
            {
                "REDIS_URL": self.redis_url,
                "STUDIO_AGENTS_DIRS": f"{ROOT / 'agents'},{project}",
                "STUDIO_EFFECT_SWEEP_MS": "1000",
                "STUDIO_EFFECT_POLL_MS": "100",
                "STUDIO_EFFECT_HEARTBEAT_SECONDS": "1",
                "STUDIO_EFFECT_STALE_SECONDS": "4",
                "STUDIO_EFFECT_RECOVER_SECONDS": "1",
                "STUDIO_EFFECT_RETRY_BASE_MS": "300",
                "STUDIO_EFFECT_MAX_ATTEMPTS": "3",
                "CELERY_WORKER_CONCURRENCY": "4",
            }
        )

    def start(self) -> EffectsStack:
        self.redis.start()
        super().start()
        self.sql_exec(SIDE_TABLE)
        return self

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.redis.stop()

    def ready_worker(self, name: str) -> Process:
        """Start a worker and wait until it consumes (its log says ``ready.``)."""
        log = self.tmp / f"{name}.log"
        seen = log.read_text(errors="replace").count(" ready.") if log.exists() else 0
        process = self.worker(name)
        wait_until(
            lambda: log.read_text(errors="replace").count(" ready.") > seen,
            f"worker {name} to be ready",
            timeout=60,
        )
        return process

    def beat(self) -> Process:
        schedule = self.tmp / f"beat-{time.monotonic_ns()}"
        args = [str(BIN / "celery"), "-A", "studio", "beat", "-s", str(schedule), "-l", "INFO"]
        return self.spawn("beat", args)

    # --- data --------------------------------------------------------------------------------

    def sql_exec(self, query: str, *args: Any) -> None:
        import psycopg

        with psycopg.connect(self.dsn) as c:
            c.execute(query, args)  # type: ignore[arg-type]

    def schedule(self, thread_id: str, name: str, args: Any, delay_ms: int) -> str:
        """Schedule through the engine in a separate process (as a tool would); the run id."""
        out = self.run(
            [
                str(BIN / "python"),
                "-m",
                "tests.integration.effects_stack",
                "schedule",
                thread_id,
                name,
                json.dumps(args),
                str(delay_ms),
            ]
        )
        return out.strip().splitlines()[-1]

    def effect(self, effect_id: str) -> dict[str, Any]:
        cols = ["status", "attempts", "error", "args", "due_at", "started_at", "manual_run"]
        [row] = self.sql(
            f"SELECT {', '.join(cols)} FROM agents_app_scheduledeffect WHERE id = %s", effect_id
        )
        return dict(zip(cols, row, strict=True))

    def side(self, effect_id: str) -> dict[str, Any] | None:
        rows = self.sql(
            "SELECT args, runs, first_ran_at FROM effect_side_log WHERE effect_id = %s", effect_id
        )
        return dict(zip(["args", "runs", "first_ran_at"], rows[0], strict=True)) if rows else None

    def wait_status(self, effect_id: str, *statuses: str, timeout: float = 30) -> dict[str, Any]:
        return wait_until(  # type: ignore[no-any-return]
            lambda: (row := self.effect(effect_id))["status"] in statuses and row,
            f"effect {effect_id} to reach {statuses}",
            timeout=timeout,
        )


def _schedule(thread_id: str, name: str, args: Any, delay_ms: int) -> str:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    django.setup()
    from asgiref.sync import async_to_sync

    from agents_app.orchestration.engines import with_engine

    async def go(engine: Any) -> str:
        state = await engine.thread_state(thread_id)
        return str(await state.schedule_effect(name, args, delay_ms))

    return str(async_to_sync(with_engine)(go))


if __name__ == "__main__":
    if sys.argv[1] == "schedule":
        print(_schedule(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])))
