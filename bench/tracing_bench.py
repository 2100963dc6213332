"""The cost of traces on a step: bench/engine_bench.py's sessions with tracing off and on,
alternating, in one process (docs/observability.md has the figures).

"On" is the SDK's tracer provider with a batch processor and an exporter that drops the
spans (the OTLP encoding and the network are the collector's business, off the step's path).

    .venv/bin/python bench/tracing_bench.py --sessions 40 --rounds 3
    .venv/bin/python bench/tracing_bench.py --smoke
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (  # noqa: E402
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from bench.engine_bench import memory_store, run  # noqa: E402
from runtime.core import tracing  # noqa: E402


class Dropping(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    options = parser.parse_args(argv)
    if options.smoke:
        options.sessions, options.rounds, warmup = 1, 1, 1
    else:
        warmup = 3
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropping()))
    for round_ in range(options.rounds):
        for label in ("off", "on"):
            if label == "on":
                tracing.enable(provider=provider)
            else:
                tracing.disable()
            report = asyncio.run(run(memory_store, options.sessions, warmup))
            print(
                f"round {round_ + 1} tracing {label:<3} p50 {report['p50_ms']:.3f} ms/step"
                f"  p90 {report['p90_ms']:.3f}"
            )
    tracing.disable()
    provider.shutdown()


if __name__ == "__main__":
    main()
