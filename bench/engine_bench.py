"""Engine overhead per step: a 20-step scripted tool loop (19 tool calls, then a text reply).

    .venv/bin/python bench/engine_bench.py                       # in-memory store
    .venv/bin/python bench/engine_bench.py --sessions 200
    .venv/bin/python bench/engine_bench.py --sessions 10 --steps 240   # flat in length?
    .venv/bin/python bench/engine_bench.py --store mypkg.bench:make_store
    .venv/bin/python bench/engine_bench.py --smoke     # one session of 21 steps (the suite's)

``--store module:function`` plugs in another store: the function receives the
definitions the run needs (model, prompt, agent) and returns a ``Store`` (it
may be async), e.g. one that saves them with the Django definition services and
returns the Django store. The scripted model answers instantly, so the figures
are the engine's own cost plus the store's: milliseconds per step (p50, p90
over every step of every session) and store calls per step (by method). With ``--steps``
longer than 20, the p50 of steps 1-20 and of the last 20 steps too: the cost per step
should not grow with the session (issue #39; tests/runtime/test_step_cost.py holds it
in counts).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel  # noqa: E402

from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig  # noqa: E402
from runtime.engine import Engine, NewMessage  # noqa: E402
from runtime.providers.test_provider import TestScript  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402
from runtime.store.protocol import Store  # noqa: E402
from runtime.tools.registry import Registry, define_tool  # noqa: E402

STEPS = 20


class CountArgs(BaseModel):
    n: int


@define_tool("Count one more", CountArgs)
async def count(state: Any, args: CountArgs) -> str:
    return f"counted {args.n}"


def definitions(steps: int = STEPS) -> list[Any]:
    """The model (a ``steps``-response script), prompt and agent of the bench."""
    script = TestScript()
    for n in range(1, steps):
        script.add_tool_call("count", {"n": n})
    script.add_text("Counted to nineteen.")
    return [
        script.model("bench_model"),
        PromptDefinition(
            name="bench_prompt",
            model="bench_model",
            prompt="Count, one tool call per step.",
            tools=["count"],
            include_chat=True,
            include_past_tools=True,
        ),
        AgentDefinition(name="bench_agent", side_a=SideConfig(prompt="bench_prompt")),
    ]


def memory_store(defs: list[Any]) -> Store:
    """The default: the in-memory store."""
    return MemoryStore().add(*defs)


class CountingStore:
    """Counts every store call, by method name."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not inspect.iscoroutinefunction(target):
            return target

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await target(*args, **kwargs)

        return counted


class StepClock:
    """An event sink that time-stamps the end of every step."""

    def __init__(self) -> None:
        self.marks: list[float] = []

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        if frame.get("type") == "step_completed":
            self.marks.append(time.perf_counter())


async def one_session(engine: Engine, clock: StepClock, steps: int = STEPS) -> list[float]:
    """Run one session; return the duration of each step in ms."""
    thread = await engine.create_thread("bench_agent")
    clock.marks.clear()
    started = time.perf_counter()
    result = await engine.run_session(thread.id, message=NewMessage("Count to nineteen."))
    assert result.stop_reason == "stop_on_response" and result.steps == steps, result
    marks = [started, *clock.marks]
    return [(b - a) * 1000 for a, b in zip(marks, marks[1:], strict=False)]


async def run(
    make_store: Callable[[list[Any]], Any], sessions: int, warmup: int, steps: int = STEPS
) -> dict[str, Any]:
    """Run ``warmup`` + ``sessions`` sessions and summarize the measured ones."""
    made = make_store(definitions(steps))
    store = await made if inspect.isawaitable(made) else made
    counting = CountingStore(store)
    clock = StepClock()
    engine = Engine(counting, clock, registry=Registry(count))  # type: ignore[arg-type]
    for _ in range(warmup):
        await one_session(engine, clock, steps)
    counting.calls.clear()
    durations: list[float] = []
    first: list[float] = []
    last: list[float] = []
    for _ in range(sessions):
        session = await one_session(engine, clock, steps)
        durations += session
        first += session[:20]
        last += session[-20:]
    calls = sum(counting.calls.values())
    return {
        "first_20_p50_ms": statistics.median(first),
        "last_20_p50_ms": statistics.median(last),
        "sessions": sessions,
        "steps": len(durations),
        "p50_ms": statistics.median(durations),
        "p90_ms": statistics.quantiles(durations, n=10)[-1],
        "calls_per_step": calls / len(durations),
        "by_method": {name: n / len(durations) for name, n in counting.calls.most_common()},
    }


def load_factory(spec: str) -> Callable[[list[Any]], Any]:
    """``module:function`` → the function."""
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr or "make_store")  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=STEPS, help="steps per session (≥ 20)")
    parser.add_argument("--store", default="", help="module:function building the store")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    options = parser.parse_args(argv)
    if options.smoke:  # one step past 20: the by-position figures print too
        options.sessions, options.warmup, options.steps = 1, 1, STEPS + 1
    factory = load_factory(options.store) if options.store else memory_store
    report = asyncio.run(run(factory, options.sessions, options.warmup, max(options.steps, 20)))
    steps = max(options.steps, 20)
    print(f"store:            {options.store or 'memory'}")
    print(f"sessions × steps: {report['sessions']} × {steps} = {report['steps']} steps")
    print(f"ms per step:      p50 {report['p50_ms']:.3f}   p90 {report['p90_ms']:.3f}")
    if steps > 20:
        print(
            f"p50 by position:  steps 1-20 {report['first_20_p50_ms']:.3f}   "
            f"steps {steps - 19}-{steps} {report['last_20_p50_ms']:.3f}"
        )
    print(f"store calls/step: {report['calls_per_step']:.2f}")
    for name, per_step in report["by_method"].items():
        print(f"  {name:<22} {per_step:.2f}")


if __name__ == "__main__":
    main()
