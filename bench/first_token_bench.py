"""Where the wait before a reply's first token goes, one post at a time.

    .venv/bin/python bench/first_token_bench.py [--posts 30] [--env NAME=VALUE ...] [--smoke]

Starts the integration stack (a throw-away PostgreSQL database, Redis, Daphne, one Celery
worker) with the clocked provider (``bench/clocked_provider.py``) answering at once, then
posts ``--posts`` messages one after another, each on its own thread whose socket is already
open, and splits each post's wait at the moments the system records:

    post        the client sends the request → the session row's ``created_at`` (the API
                checked the request, queued the message and the session)
    claim       the session row → its ``started_at`` (a worker took it: the broker's trip,
                the task's start, the claim's transaction)
    start       claimed → the provider's first token left it (the session's start reads,
                the history, the request's construction)
    relay       the first token left the provider → its frame reached the client (the
                live path: engine, Redis channel layer, Daphne, socket)
    answer      the client sends the request → its 202 arrives (what the poster waits)

Every moment is a wall-clock reading on this machine (the clocked provider stamps each
token with ``time.time_ns()``), so the parts add up to the whole. Figures vary between
runs on a shared VM: compare runs made side by side. ``--profile DIR`` records the worker and
Daphne with py-spy while the posts run (``bench/profile_summary.py DIR/worker.txt``; py-spy is
not a locked dependency: ``uv pip install --python .venv/bin/python py-spy``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from bench.service_bench import SEED, pct, speed_probe_ms  # noqa: E402
from tests.integration.stack import Stack, wait_until  # noqa: E402

PARTS = ("post", "claim", "start", "relay")


async def one_post(stack: Stack, http: httpx.AsyncClient) -> dict[str, Any]:
    """Post once on a fresh thread and return the client's wall-clock moments (µs)."""
    created = await http.post("/api/threads", json={"agent_id": "streamer"})
    thread_id = str(created.json()["threadId"])
    headers = {"Authorization": f"Bearer {stack.keys['alice']}"}
    async with connect(
        f"{stack.ws}/api/threads/{thread_id}/stream", additional_headers=headers, max_size=None
    ) as socket:
        sent = time.time_ns() // 1000
        answer = await http.post(
            f"/api/threads/{thread_id}/messages", json={"content": "stream please"}
        )
        answered = time.time_ns() // 1000
        if answer.status_code != 202:
            raise RuntimeError(f"post answered {answer.status_code}: {answer.text}")
        first_frame = first_token = 0
        frames: list[tuple[float, str]] = []
        async for raw in socket:
            frame = json.loads(raw)
            at = time.time_ns() // 1000
            frames.append(((at - sent) / 1000, str(frame.get("type") or frame.get("eventType"))))
            if frame.get("type") == "message_chunk" and not first_frame:
                first_frame = time.time_ns() // 1000
                first_token = int(frame["chunk"].split()[0])
            elif frame.get("type") == "stopped":
                break
    return {
        "thread": thread_id,
        "sent": sent,
        "answered": answered,
        "first_token": first_token,
        "first_frame": first_frame,
        "frames": frames,
    }


def recorded_moments(stack: Stack, thread_id: str) -> tuple[int, int]:
    """(session created, session started), µs since the epoch. (The message row itself is
    written when the session drains the thread's queue, after the claim.)"""
    with psycopg.connect(stack.database_url.replace("postgres://", "postgresql://")) as db:
        row = db.execute(
            "SELECT (extract(epoch FROM created_at) * 1e6)::bigint,"
            "       (extract(epoch FROM started_at) * 1e6)::bigint "
            "FROM agents_app_threadsession WHERE thread_id = %s ORDER BY created_at LIMIT 1",
            (thread_id,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def split(sample: dict[str, Any], moments: tuple[int, int]) -> dict[str, float]:
    session, started = moments
    marks = [sample["sent"], session, started, sample["first_token"], sample["first_frame"]]
    parts = {name: (marks[i + 1] - marks[i]) / 1000 for i, name in enumerate(PARTS)}
    parts["total"] = (sample["first_frame"] - sample["sent"]) / 1000
    parts["answer"] = (sample["answered"] - sample["sent"]) / 1000
    return parts


async def run(stack: Stack, posts: int, show_frames: bool) -> list[dict[str, float]]:
    async with httpx.AsyncClient(
        base_url=stack.http,
        headers={"Authorization": f"Bearer {stack.keys['alice']}"},
        timeout=60,
    ) as http:
        await one_post(stack, http)  # the first of each process pays its imports: not counted
        samples = [await one_post(stack, http) for _ in range(posts)]
    if show_frames:  # what the client received of the last post, ms after its request
        print(" ".join(f"{kind}@{at:.1f}" for at, kind in samples[-1]["frames"]))
    return [split(s, recorded_moments(stack, s["thread"])) for s in samples]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=30)
    parser.add_argument("--frames", action="store_true", help="print the last post's frames")
    parser.add_argument(
        "--profile", type=Path, default=None, help="py-spy the worker and Daphne into DIR"
    )
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the stack")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.posts, args.frames = 1, True
    return args


def stack_env(args: argparse.Namespace) -> dict[str, str]:
    """The settings this bench starts the stack with (every process of it)."""
    env = {
        "STUDIO_PROVIDER_FACTORIES": "test=bench.clocked_provider.factory",
        "LOG_LEVEL": "WARNING",
        "STUDIO_RATE_THREAD_CREATE": "off",
        "STUDIO_RATE_MESSAGE_POST": "off",
    }
    for item in args.env:
        name, _, value = item.partition("=")
        env[name.strip()] = value
    return env


def measure(stack: Stack, args: argparse.Namespace) -> None:
    """The bench on a started stack (its worker of its own; the stack is the caller's)."""
    # 1000 tokens/s, 3 tokens: the provider answers at once.
    stack.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup()\n" + SEED.format(rate=1000, tokens=3),
        ]
    )
    worker = stack.worker("bench")
    wait_until(lambda: "ready" in worker.log.read_text(), "the worker to start")
    spies = []
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        spy = Path(sys.executable).parent / "py-spy"
        for name, pid in (("worker", worker.popen.pid), ("daphne", stack.daphne.popen.pid)):
            spies.append(
                subprocess.Popen(
                    [
                        str(spy),
                        "record",
                        "--format",
                        "raw",
                        "--rate",
                        "1000",
                        "--nonblocking",
                        "--gil",
                    ]
                    + ["--pid", str(pid), "--output", str(args.profile / f"{name}.txt")],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
    rows = asyncio.run(run(stack, args.posts, args.frames))
    for spy_process in spies:  # py-spy writes its file when interrupted
        spy_process.send_signal(signal.SIGINT)
        spy_process.wait()
    print(f"machine speed probe {speed_probe_ms():.0f} ms; {len(rows)} posts, one at a time")
    print(f"{'part':>9} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for name in (*PARTS, "total", "answer"):
        values = [r[name] for r in rows]
        print(
            f"{name:>9} {pct(values, 50):>8.1f} {pct(values, 99):>8.1f} "
            f"{statistics.fmean(values):>8.1f}"
        )


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    stack = Stack(Path(tempfile.mkdtemp(prefix="first-token-bench-")))
    stack.env.update(stack_env(args))
    stack.start()
    try:
        measure(stack, args)
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
