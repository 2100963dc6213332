"""The knowledge bench runs (bench/knowledge_bench.py): its three parts on a few documents and
twenty synthetic chunks. The figures are the bench's business; this keeps it from rotting."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[4] / "bench" / "knowledge_bench.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("knowledge_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.django_db
def test_the_knowledge_bench_runs_on_twenty_chunks() -> None:
    bench = _bench()
    quality = bench.run_quality(limit=2)  # aster-clinic and brambleton-library: 4 passages
    assert (quality["documents"], quality["passages"], quality["questions"]) == (2, 4, 3)
    # Four passages: the vector side ranks them all, so each gold passage is in its top 5.
    assert quality["vectors"]["recall@5"] == 1.0
    assert quality["hybrid"]["recall@5"] == 1.0
    assert 0 <= quality["full_text"]["mrr"] <= 1
    latency = bench.run_latency(20, 3)
    assert latency["chunks"] == 20 and 0 < latency["p50_ms"] <= latency["p99_ms"]
