"""The worker's CPU per streamed token, without the database: engine → LiveSink → Redis.

    .venv/bin/python bench/token_path_bench.py [--sessions 200] [--rate 50] [--seconds 5]
        [--redis redis://127.0.0.1:6379/0] [--smoke]

``--sessions`` sessions stream at once, each ``--rate`` tokens/s for ``--seconds`` from
the service bench's clocked provider (``bench/clocked_provider.py``), through the engine
(in-memory store), the session sink (``LiveSink``: coalescing, the pacer) and the batch
publisher onto channels_redis' Pub/Sub layer on a real Redis. What one worker process
spends per token on the path of ``bench/service_bench.py``, minus the database and the
session's start, so a change to that path shows here in a minute, on one core, far less
noisy than the whole stack. Prints CPU µs per token (the process's CPU time over the
tokens streamed; the least of ``--repeat`` runs, and their median), frames per token and
the speed probe of the service bench.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

import django  # noqa: E402
from django.apps import apps  # noqa: E402

if not apps.ready:  # a caller with Django set up already (the test suite) keeps its own
    django.setup()

from channels_redis.pubsub import RedisPubSubChannelLayer  # noqa: E402

from agents_app.broadcast.events import ChunkPacer, LiveSink  # noqa: E402
from bench.clocked_provider import factory  # noqa: E402
from bench.service_bench import speed_probe_ms  # noqa: E402
from runtime.core.spec import (  # noqa: E402
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    SideConfig,
)
from runtime.engine import Engine, NewMessage  # noqa: E402
from runtime.providers import ProviderRegistry  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402


def definitions(rate: int, tokens: int) -> list[Any]:
    return [
        ModelDefinition(name="clocked", provider="test", model=f"clocked-{rate}x{tokens}"),
        PromptDefinition(name="streamer-prompt", model="clocked", prompt="Stream."),
        AgentDefinition(name="streamer", side_a=SideConfig(prompt="streamer-prompt")),
    ]


async def run(sessions: int, rate: int, seconds: float, redis_url: str) -> dict[str, float]:
    tokens = int(rate * seconds)
    layer = RedisPubSubChannelLayer(hosts=[redis_url])
    sink = LiveSink(layer=layer, pacer=ChunkPacer(budget=4000), window=0.04)
    store = MemoryStore().add(*definitions(rate, tokens))
    engine = Engine(store, sink, providers=ProviderRegistry({"test": factory}))
    threads = [await engine.create_thread("streamer") for _ in range(sessions)]
    began_cpu, began = time.process_time(), time.perf_counter()
    await asyncio.gather(*(engine.run_session(t.id, message=NewMessage("Go.")) for t in threads))
    await sink.flush()
    cpu, wall = time.process_time() - began_cpu, time.perf_counter() - began
    await layer.flush()
    streamed = sessions * tokens
    return {
        "tokens": streamed,
        "cpu_us_per_token": 1e6 * cpu / streamed,
        "cores": cpu / wall,
        "frames_per_token": sink.sent / streamed,
    }


def run_on(loop: str, coroutine: Any) -> Any:
    """``coroutine`` run to its end on a new loop of the kind ``loop`` names."""
    factory = None
    if loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coroutine)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rate", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--repeat", type=int, default=5, help="runs; the least CPU is printed")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument(
        "--redis", default=os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    options = parser.parse_args(argv)
    if options.smoke:  # two sessions of five tokens
        options.sessions, options.rate, options.seconds, options.repeat = 2, 50, 0.1, 1
    probe = speed_probe_ms()
    reports = [
        run_on(options.loop, run(options.sessions, options.rate, options.seconds, options.redis))
        for _ in range(options.repeat)
    ]
    # The least CPU of the runs: what the code costs; the other runs add the machine's noise.
    report = min(reports, key=lambda r: r["cpu_us_per_token"])
    median = statistics.median(r["cpu_us_per_token"] for r in reports)
    print(
        f"speed probe {probe:.0f} ms; {options.sessions} sessions × "
        f"{report['tokens'] // options.sessions} tokens, best of {options.repeat}: CPU "
        f"{report['cpu_us_per_token']:.1f} µs per token (median {median:.1f}; "
        f"{report['cores']:.2f} cores), {report['frames_per_token']:.2f} frames per token"
    )


if __name__ == "__main__":
    main()
