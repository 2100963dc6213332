"""The messages page and the thread list over the real stack (Daphne or uvicorn).

    .venv/bin/python bench/messages_page_bench.py [--sizes 100,10000] [--threads 50]
        [--repeat 200] [--server daphne|uvicorn] [--smoke]

Starts the integration stack (a throw-away PostgreSQL database, Redis, the ASGI server)
and measures, one request at a time from one keep-alive client:

(a) ``GET /api/threads/{id}/messages?limit=100`` (the newest page) on threads holding
    each of ``--sizes`` stored messages (inserted with COPY): p50, p99;
(b) ``GET /api/threads?limit=50`` (the thread list) for a user with ``--threads``
    threads: p50, p99;
(c) the floor: ``GET /api/auth/csrf``, which reads no table (what every request pays for
    the server, the middleware chain, ninja and the client).

The requests alternate between the cases (a, a', b, a, a', b, …), so a burst of load
from elsewhere on the machine hits every case alike.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.stack import Stack  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def setup_django(stack: Stack) -> None:
    """Django in this process, on the stack's settings, for the message model's fields (a
    caller that configured Django already, the test suite, keeps its own: only the model and
    the PostgreSQL backend's conversions are used)."""
    import django
    from django.conf import settings

    if not settings.configured:
        os.environ.update(stack.env)
        django.setup()


def fill_thread(stack: Stack, thread_id: str, count: int) -> None:
    """Insert ``count`` stored messages directly (the page read is what is measured).

    Every column of the model is written, each row built as the model builds it: a column
    added later takes its default here too (a hand-written column list left ``abandoned``
    NULL when the branching columns came, and the COPY failed on its NOT NULL)."""
    import psycopg
    from django.db import connection

    from agents_app.models import Message

    fields = Message._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    base = time.time_ns() // 1000
    url = stack.database_url.replace("postgres://", "postgresql://", 1)
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        with cursor.copy(f"COPY {Message._meta.db_table} ({columns}) FROM STDIN") as copy:
            for i in range(count):
                row = Message(
                    thread_id=thread_id,
                    role="user" if i % 2 == 0 else "assistant",
                    content=f"message number {i} " + "x" * 200,
                    status="completed",
                    created_at=base + i,
                )
                copy.write_row(
                    [f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields]
                )
        conn.commit()
        # As autovacuum would soon after such a burst (the visibility map and statistics).
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE agents_app_message")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--server", choices=("daphne", "uvicorn"), default="daphne")
    parser.add_argument(
        "--profile", type=Path, default=None, help="py-spy the server while timing (FILE)"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes, args.threads, args.repeat = "3", 2, 2
    return args


def stack_env(args: argparse.Namespace) -> dict[str, str]:
    """The settings this bench starts the stack with (every process of it)."""
    return {"LOG_LEVEL": "WARNING", "STUDIO_RATE_THREAD_CREATE": "off"}


def measure(stack: Stack, args: argparse.Namespace) -> None:
    """The bench on a started stack (the caller's)."""
    sizes = [int(x) for x in args.sizes.split(",")]
    setup_django(stack)
    client = stack.client("alice")
    urls: dict[str, str] = {}
    for size in sizes:
        thread_id = client.post("/api/threads", json={"agent_id": "greeter"}).json()["threadId"]
        fill_thread(stack, thread_id, size)
        urls[f"newest 100 of {size:>6} messages"] = f"/api/threads/{thread_id}/messages?limit=100"
    existing = client.get("/api/threads?limit=1").json()["total"]
    for _ in range(max(0, args.threads - existing)):
        client.post("/api/threads", json={"agent_id": "greeter"}).raise_for_status()
    urls[f"thread list, {args.threads} threads"] = "/api/threads?limit=50"
    # The floor: a request that reads nothing (Daphne, the middleware, ninja, the client).
    urls["floor: GET /api/auth/csrf"] = "/api/auth/csrf"
    for url in urls.values():  # warm up: connections, caches, prepared plans
        for _ in range(5):
            client.get(url).raise_for_status()
    timings: dict[str, list[float]] = {name: [] for name in urls}
    spy = None
    if args.profile is not None:
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--format",
                "raw",
                "--gil",
                "--rate",
                "500",
                "--nonblocking",
                "--pid",
                str(stack.daphne.popen.pid),
                "--output",
                str(args.profile),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1)
    for _ in range(args.repeat):
        for name, url in urls.items():
            started = time.perf_counter()
            response = client.get(url)
            timings[name].append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait()
    print(f"server {args.server}; {args.repeat} requests per case, interleaved")
    for name, values in timings.items():
        print(f"  {name}: p50 {pct(values, 50):.1f} ms, p99 {pct(values, 99):.1f} ms")


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    stack = Stack(Path(tempfile.mkdtemp(prefix="page-bench-")), server=args.server)
    stack.env.update(stack_env(args))
    stack.start()
    try:
        measure(stack, args)
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
