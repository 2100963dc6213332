"""The knowledge bench: retrieval quality, ingestion throughput and query latency.

    .venv/bin/python bench/knowledge_bench.py [--sizes 10000,100000] [--queries 50] [--pgvector]
        [--smoke]

Runs on a throw-away PostgreSQL database (a copy of the integration tests' migrated
template, ``BENCH_POSTGRES_URL`` the admin URL), in this process, calling the search pieces
directly (``agents_app/services/knowledge/search.py``); ``--pgvector`` runs on a PostgreSQL 16
with pgvector of its own instead (the ``pgserver`` wheel's), migrated from zero:

(a) **quality** on the corpus that ships here (``bench/knowledge_corpus/``: 46 short
    Markdown documents on made-up topics, two headed sections each, six of them near
    namesakes of others (a harbour ferry beside the river ferry, a go club beside the chess
    club), and 59 questions, each with its gold document and section). The corpus is ingested with the local embedding
    model (``document_ingest``, as a worker does); each question is ranked by full text only
    (``keyword_ranking``), by vectors only (``vector_index()``) and hybrid (the two fused by
    reciprocal rank fusion, as ``search`` does). A hit is the passage of the gold section.
    recall@5: the share of questions whose gold passage is in the top 5; MRR: the mean of
    1/rank of the gold passage (0 when not in the top 50 either side returns);
(b) **ingestion throughput**: the corpus (passages per second) and a PDF of ``--pages``
    pages (pages and passages per second), parsed, chunked, embedded and written;
(c) **query latency** p50/p99 of ``search`` at each of ``--sizes`` chunks, with the
    vector index ``search`` uses on this database (pgvector's where it has the extension,
    else exact search with numpy; the first line printed says which). These chunks are
    synthetic: random words from a small vocabulary and random unit vectors (384
    dimensions, as the local model's), written straight to the table; the query's embedding
    is a random unit vector too (the local model's own time for a query is reported apart),
    so the figure is the database's and the fusion's.

``run_quality``, ``run_latency`` and ``run_ingestion`` take a configured Django
(``tests/agents_app/services/knowledge/test_knowledge_bench.py`` checks their figures on a few
chunks). ``--smoke`` (the test suite's, ``tests/integration/test_bench_smoke.py``): the first
two documents and their questions, a one-page PDF, 20 synthetic chunks and three queries.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "knowledge_corpus"
sys.path.insert(0, str(ROOT))

DIMENSION = 384
DEPTH = 50  # how deep each ranking goes, as ``search.CANDIDATES``
# The synthetic chunks' words: 4,000 made-up words of three syllables, so a two-word query
# matches a few hundred of 100,000 chunks, as words of a real collection do (a tiny
# vocabulary would make every chunk match and measure the worst case of the full-text side).
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ren",
    "tu",
    "vas",
    "zel",
    "or",
    "pin",
    "dra",
    "que",
    "sol",
    "bet",
    "hum",
    "gri",
    "fao",
    "nel",
    "yus",
    "pek",
    "tor",
]
VOCABULARY = [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES[:10]]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _base(name: str) -> Any:
    from agents_app.models import KnowledgeBase

    return KnowledgeBase.objects.create(name=name)


def _ingest(base: Any, files: list[tuple[str, str, bytes]]) -> tuple[float, int]:
    """Add and ingest each file; (seconds, passages)."""
    from agents_app.services.knowledge.documents import document_add
    from agents_app.services.knowledge.ingestion import document_ingest

    documents = [
        document_add(base=base, filename=name, content_type=kind, data=data)
        for name, kind, data in files
    ]
    started = time.perf_counter()
    for document in documents:
        status = document_ingest(document.pk)
        assert status == "ready", (document.filename, status)
    seconds = time.perf_counter() - started
    return seconds, sum(d.chunks.count() for d in documents)


def run_ingestion(pages: int) -> dict[str, float]:
    """A PDF of ``pages`` pages (three paragraphs each) through ingestion."""
    from tests.agents_app.services.knowledge.sample_files import pdf_bytes

    text = [
        [
            f"Page {p}, part {n}: "
            + " ".join(VOCABULARY[(p * 31 + n * 7 + i) % 4000] for i in range(30))
            for n in range(3)
        ]
        for p in range(pages)
    ]
    base = _base(f"bench_pdf_{uuid.uuid4().hex[:6]}")
    seconds, passages = _ingest(base, [("bench.pdf", "application/pdf", pdf_bytes(text))])
    return {
        "pages": pages,
        "passages": passages,
        "seconds": seconds,
        "pages_per_second": pages / seconds,
        "passages_per_second": passages / seconds,
    }


def _gold(base: Any, questions: list[dict[str, str]]) -> dict[int, int]:
    """Question index -> the chunk id of its gold section."""
    from agents_app.models.knowledge import KnowledgeChunk

    by_place = {
        (c.document.filename.removesuffix(".md"), c.heading_path.split(" › ")[-1]): c.pk
        for c in KnowledgeChunk.objects.filter(document__base=base).select_related("document")
    }
    return {i: by_place[(q["document"], q["section"])] for i, q in enumerate(questions)}


def _scores(rankings: list[list[int]], gold: dict[int, int]) -> dict[str, float]:
    recall = sum(1 for i, ranked in enumerate(rankings) if gold[i] in ranked[:5])
    reciprocal = sum(
        1 / (ranked.index(gold[i]) + 1) for i, ranked in enumerate(rankings) if gold[i] in ranked
    )
    return {"recall@5": recall / len(rankings), "mrr": reciprocal / len(rankings)}


def run_quality(corpus: Path = CORPUS, limit: int | None = None) -> dict[str, Any]:
    """Ingest the corpus, rank every question three ways; the scores and the ingestion."""
    from agents_app.services.knowledge.embedding import embed_query
    from agents_app.services.knowledge.search import (
        Filters,
        keyword_ranking,
        search_indexes_description,
        vector_index,
    )
    from runtime.knowledge.fusion import RRF_K, reciprocal_rank_fusion

    questions = json.loads((corpus / "questions.json").read_text())
    paths = sorted((corpus / "documents").glob("*.md"))
    if limit is not None:  # the smoke test: the first few documents and their questions
        paths = paths[:limit]
        kept = {p.stem for p in paths}
        questions = [q for q in questions if q["document"] in kept]
    base = _base(f"bench_corpus_{uuid.uuid4().hex[:6]}")
    files = [(p.name, "text/markdown", p.read_bytes()) for p in paths]
    seconds, passages = _ingest(base, files)
    gold = _gold(base, questions)
    keyword, vector, hybrid, query_seconds = [], [], [], []
    for q in questions:
        words = keyword_ranking(base, q["question"], DEPTH, Filters())
        started = time.perf_counter()
        query_vector = embed_query(q["question"])
        query_seconds.append(time.perf_counter() - started)
        meaning = vector_index().nearest(base, query_vector, DEPTH, Filters())
        keyword.append(words)
        vector.append(meaning)
        hybrid.append([pk for pk, _ in reciprocal_rank_fusion([words, meaning], RRF_K)])
    return {
        "indexes": search_indexes_description(),
        "documents": len(paths),
        "questions": len(questions),
        "passages": passages,
        "ingest_seconds": seconds,
        "passages_per_second": passages / seconds,
        "query_embedding_ms_p50": 1000 * statistics.median(query_seconds),
        "full_text": _scores(keyword, gold),
        "vectors": _scores(vector, gold),
        "hybrid": _scores(hybrid, gold),
    }


def _synthetic_chunks(base: Any, count: int, seed: int = 7) -> None:
    """``count`` ready chunks of random words and random unit vectors, in batches."""
    import numpy as np

    from agents_app.db.knowledge_vectors import pgvector_version, vectors_store
    from agents_app.models.knowledge import DocumentStatus, KnowledgeChunk, KnowledgeDocument

    rng = np.random.default_rng(seed)
    document = KnowledgeDocument.objects.create(
        base=base,
        title="synthetic",
        filename="synthetic.txt",
        content_type="text/plain",
        status=DocumentStatus.READY,
        chunk_count=count,
        chunks_embedded=count,
    )
    words = np.array(VOCABULARY)
    for start in range(0, count, 5000):
        size = min(5000, count - start)
        vectors = rng.standard_normal((size, DIMENSION)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        picks = rng.integers(0, len(words), (size, 60))
        rows = KnowledgeChunk.objects.bulk_create(
            KnowledgeChunk(
                document=document,
                ordinal=start + i,
                text=" ".join(words[picks[i]]),
                heading_path="",
                page=None,
                embedding=vectors[i].tobytes(),
                dimension=DIMENSION,
            )
            for i in range(size)
        )
        if pgvector_version():  # as ingestion writes them: pgvector's table too
            vectors_store(base.pk, [(row.pk, vectors[i]) for i, row in enumerate(rows)])


def run_latency(count: int, queries: int) -> dict[str, float]:
    """p50/p99 of ``search`` over ``count`` synthetic chunks (random query vectors)."""
    import numpy as np

    from agents_app.services.knowledge import search as search_module

    base = _base(f"bench_latency_{uuid.uuid4().hex[:6]}")
    started = time.perf_counter()
    _synthetic_chunks(base, count)
    load_seconds = time.perf_counter() - started
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE agents_app_knowledgechunk")
    rng = np.random.default_rng(11)

    def random_query(text: str, model: str = "") -> tuple[Any, None]:
        vector = rng.standard_normal(DIMENSION).astype(np.float32)
        return vector / np.linalg.norm(vector), None

    real: Callable[..., Any] = search_module.embed_query_metered
    search_module.embed_query_metered = random_query  # type: ignore[assignment]
    try:
        times = []
        for n in range(queries + 2):
            q = f"{VOCABULARY[n * 13 % 4000]} {VOCABULARY[n * 101 % 4000]}"
            began = time.perf_counter()
            found = search_module.search(base, q, k=5)
            if n >= 2:  # the first two warm the connection and the caches
                times.append(time.perf_counter() - began)
            assert found, q  # the vector side always answers
    finally:
        search_module.embed_query_metered = real  # type: ignore[assignment]
    return {
        "chunks": count,
        "queries": queries,
        "load_seconds": load_seconds,
        "p50_ms": 1000 * _percentile(times, 0.5),
        "p99_ms": 1000 * _percentile(times, 0.99),
    }


def _database(admin_url: str) -> str:
    import psycopg

    from tests.integration.stack import migrated_template

    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "studio.settings"}
    template = migrated_template(env)
    name = f"bench_kb_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return f"{admin_url.rsplit('/', 1)[0]}/{name}".replace("postgresql://", "postgres://", 1)


def _pgvector_database() -> tuple[str, Any]:
    """A PostgreSQL 16 with pgvector of our own (the ``pgserver`` wheel's, as
    ``tests/agents_app/services/knowledge/test_search_pgvector.py`` starts it), migrated."""
    import warnings
    from urllib.parse import quote

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    server = pgserver.get_server(tempfile.mkdtemp(prefix="kb-bench-pgvector-"), cleanup_mode="stop")
    info = server.get_postmaster_info()
    return (
        f"postgres://postgres@{quote(str(info.socket_dir), safe='')}:{info.port}/postgres",
        server,
    )


def _drop(admin_url: str, url: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def _print(quality: dict[str, Any], pdf: dict[str, float], latency: list[dict[str, float]]) -> None:
    print(quality["indexes"])
    print(
        f"corpus: {quality['documents']} documents, {quality['passages']} passages, "
        f"{quality['questions']} questions"
    )
    print("| ranking | recall@5 | MRR |")
    print("|---|---|---|")
    for name in ("full_text", "vectors", "hybrid"):
        s = quality[name]
        print(f"| {name} | {s['recall@5']:.2f} | {s['mrr']:.3f} |")
    print(
        f"ingestion, corpus: {quality['passages_per_second']:.2f} passages/s "
        f"({quality['ingest_seconds']:.1f} s); query embedding p50 "
        f"{quality['query_embedding_ms_p50']:.0f} ms"
    )
    print(
        f"ingestion, {pdf['pages']}-page PDF: {pdf['pages_per_second']:.2f} pages/s, "
        f"{pdf['passages_per_second']:.2f} passages/s ({pdf['seconds']:.1f} s)"
    )
    for row in latency:
        print(
            f"search over {row['chunks']:,} synthetic chunks: p50 {row['p50_ms']:.0f} ms, "
            f"p99 {row['p99_ms']:.0f} ms ({row['queries']} queries; loaded in "
            f"{row['load_seconds']:.0f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument(
        "--pgvector", action="store_true", help="on a PostgreSQL with pgvector of its own"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    options = parser.parse_args()
    documents = None
    if options.smoke:
        documents, options.pages, options.sizes, options.queries = 2, 1, "20", 3
    admin_url = os.environ.get("BENCH_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres")
    server = None
    if options.pgvector:
        url, server = _pgvector_database()
    else:
        url = _database(admin_url)
    os.environ["DATABASE_URL"] = url
    os.environ["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="knowledge-bench-")  # the uploads
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    try:
        import django

        django.setup()
        if server is not None:
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
        quality = run_quality(limit=documents)
        pdf = run_ingestion(options.pages)
        latency = [run_latency(int(n), options.queries) for n in options.sizes.split(",")]
    finally:
        from django.db import connections

        connections.close_all()
        if server is not None:
            server.cleanup()
        else:
            _drop(admin_url, url)
    _print(quality, pdf, latency)


if __name__ == "__main__":
    main()
