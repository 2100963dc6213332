"""Our engine against LangGraph's PostgreSQL checkpointer, side by side in one run (issue #58).

Each round runs ``bench/django_engine_bench.py`` (DjangoStore on PostgreSQL, our virtualenv)
and ``bench/langgraph_compare.py`` (LangGraph's ``AsyncPostgresSaver``, a throw-away
virtualenv: see that file's docstring) twice, with LangGraph's ``sync`` durability (the
promise our engine keeps: a step's writes are stored before the next part runs) and with
its default ``async`` (writes stored while the next part runs), one right after the other,
in turns, and prints each round's p50 ms per step and our ratio to each. A figure taken
minutes apart compares two states of a machine whose speed drifts; figures taken in the same
round compare the engines. Every run is on the same event loop, ``--loop`` (the worker's,
uvloop, unless it says asyncio).

    .venv/bin/python bench/engine_ratio.py --rounds 3 --langgraph-python /tmp/lg/bin/python

Both benches have smoke cases of their own (``tests/integration/test_bench_smoke.py``), which
hold the ``ms per step`` line this reads.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
P50 = re.compile(r"^ms per step:\s+p50 ([0-9.]+)", re.M)


def p50_of(command: list[str], env: dict[str, str]) -> float:
    """The p50 ms per step a bench printed (its whole output when it printed none)."""
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    found = P50.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return float(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--langgraph-python", default="/tmp/lg/bin/python")
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STUDIO_EVENT_LOOP": args.loop}
    theirs = [args.langgraph_python, "bench/langgraph_compare.py", str(args.sessions)]
    runs = {
        "ours": [sys.executable, "bench/django_engine_bench.py", "--sessions", str(args.sessions)],
        "sync": [*theirs, "--durability", "sync"],
        "async": [*theirs, "--durability", "async"],
    }
    if not Path(args.langgraph_python).exists():
        raise SystemExit(f"{args.langgraph_python}: no such Python (see langgraph_compare.py)")
    ratios: dict[str, list[float]] = {"sync": [], "async": []}
    print(f"{args.loop} loop; LangGraph with sync durability (our promise) and async (its default)")
    print("round   ours p50 ms   LangGraph sync   ratio   LangGraph async   ratio")
    for n in range(1, args.rounds + 1):
        # Turn the order each round: whatever the machine does between the runs of a round
        # falls on each side in turn.
        names = list(runs)[n % 3 :] + list(runs)[: n % 3]
        p50 = {name: p50_of(runs[name], env) for name in names}
        for mode in ratios:
            ratios[mode].append(p50["ours"] / p50[mode])
        print(
            f"{n:>5}   {p50['ours']:>11.3f}   {p50['sync']:>14.3f}   {ratios['sync'][-1]:>5.2f}"
            f"   {p50['async']:>15.3f}   {ratios['async'][-1]:>5.2f}",
            flush=True,
        )
    for mode, values in ratios.items():
        print(
            f"ratio to LangGraph {mode}: median {statistics.median(values):.2f},"
            f" worst {max(values):.2f}"
        )


if __name__ == "__main__":
    main()
