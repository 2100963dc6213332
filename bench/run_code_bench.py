"""run_code start-up bench: the latency of one whole sandboxed execution.

    .venv/bin/python bench/run_code_bench.py [--runs 50] [--smoke]

Each run is ``state.run_code``'s full path for a trivial module: spawn a child
process, import the engine and the TypeScript eraser, lower the OS limits,
erase types, link and evaluate, marshal the result, SIGKILL and reap. Runs
are sequential, so this is the latency one tool call pays, not throughput.
Reports p50/p95/max of the time from ``run_code`` to the settled result, and
the same for a run with a bridged async host call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.sandbox.runner import run_code  # noqa: E402

TRIVIAL = "export default (n: number): number => n + 1;"
BRIDGED = "import { load } from 'host'; export default async () => (await load('k')).length;"


async def _load(key: str) -> str:
    return key * 3


async def measure(source: str, runs: int, **options: object) -> list[float]:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await run_code(source, options)
        timings.append((time.perf_counter() - started) * 1000)
        if result.status != "success":
            raise SystemExit(f"bench run failed: {result.status} {result.error}")
    return timings


def report(label: str, timings: list[float]) -> None:
    ordered = sorted(timings)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    print(
        f"{label:<24} n={len(ordered)}  p50={statistics.median(ordered):6.1f} ms  "
        f"p95={p95:6.1f} ms  max={ordered[-1]:6.1f} ms"
    )


async def run(runs: int, warmup: int = 3) -> None:
    await measure(TRIVIAL, warmup, execute={"args": [1]})  # warm the page cache
    report("trivial module", await measure(TRIVIAL, runs, execute={"args": [1]}))
    report("bridged async import", await measure(BRIDGED, runs, imports={"host": {"load": _load}}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    options = parser.parse_args(argv)
    asyncio.run(run(1, 1) if options.smoke else run(options.runs))


if __name__ == "__main__":
    main()
