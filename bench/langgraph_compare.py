"""The same 20-step loop on LangGraph with its PostgreSQL checkpointer, for a side-by-side figure.

LangGraph is not one of our dependencies: run this in a throw-away virtualenv,

    python3 -m venv /tmp/lg && /tmp/lg/bin/pip install langgraph langgraph-checkpoint-postgres \\
        "psycopg[binary]" psycopg-pool uvloop
    /tmp/lg/bin/python bench/langgraph_compare.py [sessions] [--durability sync|async] [--smoke]

alternating with ``bench/django_engine_bench.py`` (this VM's speed drifts during a day, so
only figures taken side by side compare: ``engine_ratio.py`` does it). A step is the same as
ours: from one model call to the next, i.e. the scripted reply, its tool call and both
super-steps' checkpoints (``AsyncPostgresSaver`` on a throw-away database of
``BENCH_POSTGRES_URL``).

``--durability`` is LangGraph's own option. ``sync`` (this bench's default) writes each
super-step's checkpoint before the next super-step starts: the promise our engine keeps (the
model's response is stored before its tools run, their results before the next model call;
``docs/engine.md``). ``async``, LangGraph's default, writes it while the next super-step
runs, so a tool can run before the response that asked for it is stored. The loop is the one
our worker runs sessions on (``STUDIO_EVENT_LOOP``: uvloop unless it says asyncio), so both
engines run on the same loop.

``--smoke`` (the test suite's, in our own virtualenv): one session; without LangGraph, our
side of the loop only (in memory), and the output says so.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    import psycopg
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode
except ImportError:  # our own virtualenv: the smoke run says so and runs our side
    LANGGRAPH = False
else:
    LANGGRAPH = True

ADMIN = os.environ.get("BENCH_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres")
STEPS = 20
WARMUP = 3
MARKS: list[float] = []  # when each model call starts
NOT_INSTALLED = (
    "LangGraph is not installed in this virtualenv (it is not one of our dependencies: see"
    " this file's docstring for a throw-away one)"
)


def count(n: int) -> str:
    """Count one more."""
    return f"counted {n}"


class State(TypedDict):
    messages: Annotated[list[Any], add_messages]


def agent(state: State) -> dict[str, Any]:
    """The scripted model: a tool call per step, then the text reply."""
    MARKS.append(time.perf_counter())
    done = sum(1 for m in state["messages"] if m.type == "ai")
    if done < STEPS - 1:
        call = {"name": "count", "args": {"n": done + 1}, "id": f"call_{uuid.uuid4().hex[:8]}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    return {"messages": [AIMessage(content="Counted to nineteen.")]}


def route(state: State) -> str:
    return "tools" if state["messages"][-1].tool_calls else END


def loop_factory() -> Any:
    """A new event loop of the kind our worker runs sessions on (``studio/event_loop.py``,
    which this virtualenv cannot import: it has no Django)."""
    name = os.environ.get("STUDIO_EVENT_LOOP", "").strip().lower() or "uvloop"
    if name == "asyncio":
        return asyncio.new_event_loop
    if name != "uvloop":
        sys.exit(f"STUDIO_EVENT_LOOP must be uvloop or asyncio, not {name!r}")
    try:
        import uvloop
    except ImportError:
        sys.exit(
            "uvloop is not installed in this virtualenv (STUDIO_EVENT_LOOP=asyncio runs without)"
        )
    return uvloop.new_event_loop


async def one_session(app: Any, durability: str) -> list[float]:
    """Step durations (ms) of one session: start → 2nd model call → … → end."""
    MARKS.clear()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 100}
    started = time.perf_counter()
    await app.ainvoke(
        {"messages": [HumanMessage("Count to nineteen.")]}, config, durability=durability
    )
    ends = [*MARKS[1:], time.perf_counter()]
    return [(b - a) * 1000 for a, b in zip([started, *MARKS[1:]], ends, strict=True)]


async def langgraph_side(sessions: int, warmup: int, durability: str) -> None:
    name = f"lgbench_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        url = f"{ADMIN.rsplit('/', 1)[0]}/{name}"
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            graph = StateGraph(State)
            graph.add_node("agent", agent)
            graph.add_node("tools", ToolNode([tool(count)]))
            graph.add_edge(START, "agent")
            graph.add_conditional_edges("agent", route, ["tools", END])
            graph.add_edge("tools", "agent")
            app = graph.compile(checkpointer=saver)
            for _ in range(warmup):
                await one_session(app, durability)
            durations: list[float] = []
            for _ in range(sessions):
                durations += await one_session(app, durability)
        p50 = statistics.median(durations)
        p90 = statistics.quantiles(durations, n=10)[-1]
        loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
        print(
            f"LangGraph + AsyncPostgresSaver, durability {durability}, {loop} loop,"
            f" {len(durations)} steps"
        )
        print(f"ms per step:      p50 {p50:.3f}   p90 {p90:.3f}")
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def our_side(sessions: int, warmup: int) -> None:
    """The same loop on our engine (in memory: the smoke run's stand-in when LangGraph is
    missing; ``django_engine_bench.py`` is the side-by-side figure on PostgreSQL)."""
    from bench.engine_bench import memory_store, run

    report = asyncio.run(run(memory_store, sessions, warmup))
    print(f"our engine (in-memory store), {report['steps']} steps")
    print(f"ms per step:      p50 {report['p50_ms']:.3f}   p90 {report['p90_ms']:.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sessions", type=int, nargs="?", default=50)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    parser.add_argument(
        "--durability",
        choices=["sync", "async"],
        default="sync",
        help="LangGraph's durability mode: sync is our engine's promise (the docstring)",
    )
    options = parser.parse_args(argv)
    sessions, warmup = (1, 1) if options.smoke else (options.sessions, WARMUP)
    if LANGGRAPH:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            runner.run(langgraph_side(sessions, warmup, options.durability))
    elif options.smoke:
        print(f"{NOT_INSTALLED}: our side only.")
        our_side(sessions, warmup)
    else:
        sys.exit(f"{NOT_INSTALLED}.")


if __name__ == "__main__":
    main()
