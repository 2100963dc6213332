"""The same 20-step loop on LangGraph with its PostgreSQL checkpointer, for a side-by-side figure.

LangGraph is not one of our dependencies: run this in a throw-away virtualenv,

    python3 -m venv /tmp/lg && /tmp/lg/bin/pip install langgraph langgraph-checkpoint-postgres \\
        "psycopg[binary]" psycopg-pool
    /tmp/lg/bin/python bench/langgraph_compare.py [sessions]

alternating with ``bench/django_engine_bench.py`` (this VM's speed drifts during a day, so
only figures taken side by side compare). A step is the same as ours: from one model call to
the next, i.e. the scripted reply, its tool call and both super-steps' checkpoints
(``AsyncPostgresSaver`` on a throw-away database of ``BENCH_POSTGRES_URL``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
import uuid
from typing import Annotated, Any, TypedDict

import psycopg
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

ADMIN = os.environ.get("BENCH_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres")
STEPS = 20
WARMUP = 3
MARKS: list[float] = []  # when each model call starts


@tool
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


async def one_session(app: Any) -> list[float]:
    """Step durations (ms) of one session: start → 2nd model call → … → end."""
    MARKS.clear()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 100}
    started = time.perf_counter()
    await app.ainvoke({"messages": [HumanMessage("Count to nineteen.")]}, config)
    ends = [*MARKS[1:], time.perf_counter()]
    return [(b - a) * 1000 for a, b in zip([started, *MARKS[1:]], ends, strict=True)]


async def main(sessions: int) -> None:
    name = f"lgbench_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        url = f"{ADMIN.rsplit('/', 1)[0]}/{name}"
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            graph = StateGraph(State)
            graph.add_node("agent", agent)
            graph.add_node("tools", ToolNode([count]))
            graph.add_edge(START, "agent")
            graph.add_conditional_edges("agent", route, ["tools", END])
            graph.add_edge("tools", "agent")
            app = graph.compile(checkpointer=saver)
            for _ in range(WARMUP):
                await one_session(app)
            durations: list[float] = []
            for _ in range(sessions):
                durations += await one_session(app)
        p50 = statistics.median(durations)
        p90 = statistics.quantiles(durations, n=10)[-1]
        print(f"LangGraph + AsyncPostgresSaver, {len(durations)} steps")
        print(f"ms per step:      p50 {p50:.3f}   p90 {p90:.3f}")
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
