"""The engine bench over the production pieces: DjangoStore on PostgreSQL, live events on.

    .venv/bin/python bench/django_engine_bench.py [--sessions 50] [--redis redis://127.0.0.1:6379/9]
        [--smoke]

Creates a throw-away PostgreSQL database (``BENCH_POSTGRES_URL``, default the local
server over TCP), a copy of the integration tests' migrated template (built once, as
``migrate`` would), saves the bench's model/prompt/agent through the
definition services, and runs the 20-step scripted tool loop of ``engine_bench.py``
with the Django store as the session runner builds it (commits on the event loop's
own connection) and the session runner's live sink, ``LiveSink`` (``--sink channels``
for the simpler ``ChannelsSink``), on the Redis channel layer with ``--redis``, else the
in-memory layer, on the event loop the worker runs sessions on (``STUDIO_EVENT_LOOP``:
uvloop unless it says asyncio; ``engine_ratio.py`` runs LangGraph's side on the same).
Prints ms per step (p50, p90), store calls and SQL statements per step (Django's queries
and the engine's commit statements), and this process's CPU time per step (steadier than
the wall clock on a busy machine). ``--profile FILE`` writes a cProfile of the measured
sessions only (not the migration or the warm-up) to FILE, for ``python -m pstats FILE``.
``--smoke`` (the test suite's): one session after one warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _database(admin_url: str) -> str:
    """A new database, a copy of the migrated template (migrating from zero took seconds)."""
    import psycopg

    from tests.integration.stack import migrated_template

    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "studio.settings"}
    template = migrated_template(env)
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return f"{admin_url.rsplit('/', 1)[0]}/{name}"


def _drop(admin_url: str, url: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


class Fanout:
    """Time-stamps steps (bench clock) and forwards every frame to the live sink."""

    def __init__(self, clock: Any, live: Any) -> None:
        self.clock, self.live = clock, live

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        self.live.emit(thread_id, frame)
        self.clock.emit(thread_id, frame)


QUERIES = [0]


def _count_queries(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    QUERIES[0] += 1
    return execute(sql, params, many, context)


def _install_counter(connection: Any, **_: Any) -> None:
    connection.execute_wrappers.append(_count_queries)


async def bench(
    sessions: int, warmup: int, sink: str = "live", profile: str = ""
) -> dict[str, Any]:
    from django.db.backends.signals import connection_created
    from engine_bench import STEPS, CountingStore, StepClock, count, definitions, one_session

    from agents_app.bridge.store import DjangoStore
    from agents_app.broadcast.events import ChannelsSink, LiveSink
    from agents_app.services.definitions.saves import save_definitions
    from runtime.engine import Engine
    from runtime.tools.registry import Registry

    connection_created.connect(_install_counter, weak=False)
    from asgiref.sync import sync_to_async

    from agents_app.bridge import async_commit

    # The engine's commits run on the loop's own connection, outside Django's wrappers.
    run_statement = async_commit.run

    async def counted_statement(query: str, params: list[Any]) -> Any:
        QUERIES[0] += 1
        return await run_statement(query, params)

    async_commit.run = counted_statement  # type: ignore[assignment]

    await sync_to_async(save_definitions)(
        [(d.name, d) for d in definitions()], strict_code_names=False
    )
    clock = StepClock()
    # As the session runner builds it: commits on the event loop's own connection.
    store = CountingStore(DjangoStore(async_commits=True))
    live = LiveSink() if sink == "live" else ChannelsSink()
    engine = Engine(store, Fanout(clock, live), registry=Registry(count))  # type: ignore[arg-type]
    for _ in range(warmup):
        await one_session(engine, clock)
    store.calls.clear()
    QUERIES[0] = 0
    durations: list[float] = []
    profiler = cProfile.Profile() if profile else None
    started, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    for _ in range(sessions):
        durations += await one_session(engine, clock)
    await live.flush()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    await async_commit.close()
    steps = len(durations)
    assert steps == sessions * STEPS
    return {
        "steps": steps,
        "p50": statistics.median(durations),
        "p90": statistics.quantiles(durations, n=10)[-1],
        "calls": sum(store.calls.values()) / steps,
        "queries": QUERIES[0] / steps,
        "wall": wall,
        "cpu": cpu * 1000 / steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--redis", default="", help="Redis URL for the channel layer (default: in-memory)"
    )
    parser.add_argument("--sink", choices=["live", "channels"], default="live")
    parser.add_argument("--profile", default="", help="write a cProfile of the sessions here")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    options = parser.parse_args()
    if options.smoke:
        options.sessions, options.warmup = 1, 1
    admin_url = os.environ.get("BENCH_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres")
    url = _database(admin_url)
    os.environ["DATABASE_URL"] = url
    os.environ["DB_CONN_MAX_AGE"] = "600"
    if options.redis:
        os.environ["REDIS_URL"] = options.redis
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    try:
        import django

        django.setup()
        from studio.event_loop import loop_factory, loop_name

        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            report = runner.run(
                bench(options.sessions, options.warmup, options.sink, options.profile)
            )
    finally:
        from django.db import connections

        connections.close_all()
        _drop(admin_url, url)
    layer = "redis" if options.redis else "in-memory"
    name = "LiveSink" if options.sink == "live" else "ChannelsSink"
    print(f"DjangoStore on PostgreSQL, {name} ({layer} layer), {loop_name()} loop")
    print(f"steps:            {report['steps']}  ({report['wall']:.1f} s)")
    print(f"ms per step:      p50 {report['p50']:.3f}   p90 {report['p90']:.3f}")
    print(f"CPU ms per step:  {report['cpu']:.3f}  (this process: the engine, store, live sink)")
    print(f"store calls/step: {report['calls']:.2f}")
    print(f"SQL statements/step: {report['queries']:.2f}")


if __name__ == "__main__":
    main()
