"""Our engine against LangGraph's PostgreSQL checkpointer, side by side in one run (issue #58).

Each round runs ``bench/django_engine_bench.py`` (DjangoStore on PostgreSQL, our virtualenv)
and ``bench/langgraph_compare.py`` (LangGraph's ``AsyncPostgresSaver``, a throw-away
virtualenv: see that file's docstring) one right after the other, in alternating order, and
prints each round's p50 ms per step and their ratio. A figure taken minutes apart compares
two states of a machine whose speed drifts; two figures taken in the same round compare the
two engines.

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
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ours = [sys.executable, "bench/django_engine_bench.py", "--sessions", str(args.sessions)]
    theirs = [args.langgraph_python, "bench/langgraph_compare.py", str(args.sessions)]
    if not Path(args.langgraph_python).exists():
        raise SystemExit(f"{args.langgraph_python}: no such Python (see langgraph_compare.py)")
    ratios = []
    print("round   ours p50 ms   LangGraph p50 ms   ratio")
    for n in range(1, args.rounds + 1):
        # Alternate who goes first: whatever the machine does between the two runs of a
        # round falls on each side in turn.
        if n % 2:
            our_p50, their_p50 = p50_of(ours, env), p50_of(theirs, env)
        else:
            their_p50 = p50_of(theirs, env)
            our_p50 = p50_of(ours, env)
        ratios.append(our_p50 / their_p50)
        print(f"{n:>5}   {our_p50:>11.3f}   {their_p50:>16.3f}   {ratios[-1]:.2f}", flush=True)
    print(f"ratio: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}")


if __name__ == "__main__":
    main()
