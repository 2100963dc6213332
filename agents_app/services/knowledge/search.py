"""Hybrid search over a knowledge base (docs/knowledge.md, "How search works").

Two rankings of the base's chunks (of ready documents only) fused by reciprocal rank fusion
(``runtime/knowledge/fusion.py``, k = 60):

- keywords: PostgreSQL's full-text search (``websearch_to_tsquery`` + ``ts_rank_cd`` over a
  generated tsvector with a GIN index), SQLite's FTS5 (BM25) in the embedded set-up
  (``agents_app/db/knowledge_search.py``); a SQLite without FTS5 ranks the chunks holding the
  query's words, rarest words first (``runtime/knowledge/keywords.py``);
- meaning: cosine similarity between the query's embedding and each chunk's, through a
  ``VectorIndex``: pgvector's HNSW index (``PgVectors``, ``agents_app/db/knowledge_vectors.py``)
  where the database has pgvector, else exact, with numpy over the base's stored vectors
  (``NumpyVectors``: SQLite, and PostgreSQL servers without the extension).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from django.db import connection
from django.db.models import QuerySet

from agents_app.db.knowledge_search import full_text_ranking, has_full_text
from agents_app.db.knowledge_vectors import nearest_chunks, pgvector_version
from agents_app.models import Log
from agents_app.models.knowledge import DocumentStatus, KnowledgeBase, KnowledgeChunk
from agents_app.services.knowledge.embedding import EmbeddingUsage, embed_query_metered
from runtime.knowledge.fusion import RRF_K, reciprocal_rank_fusion
from runtime.knowledge.keywords import term_overlap_ranking

if TYPE_CHECKING:
    import numpy as np

DEFAULT_K = 5
MAX_K = 20
CANDIDATES = 50  # how deep each side's ranking goes into the fusion


@dataclass(frozen=True)
class Filters:
    """Which chunks a search may return: some documents only (by id), some pages only."""

    document_ids: Sequence[int] | None = None
    pages: tuple[int, int] | None = None  # first and last page, inclusive


@dataclass(frozen=True)
class Passage:
    """One result: the chunk, where it is, and its place in each ranking (None: not there)."""

    chunk_id: int
    document_id: int
    document_title: str
    filename: str
    heading_path: str
    page: int | None
    text: str
    score: float
    keyword_rank: int | None = None
    vector_rank: int | None = None


class VectorIndex(Protocol):
    """The vector side: chunk ids of ``base`` nearest to ``vector``, best first."""

    def nearest(
        self, base: KnowledgeBase, vector: np.ndarray, limit: int, filters: Filters
    ) -> list[int]: ...


def _chunks(base: KnowledgeBase, filters: Filters) -> QuerySet[KnowledgeChunk]:
    rows = KnowledgeChunk.objects.filter(document__base=base, document__status=DocumentStatus.READY)
    if filters.document_ids is not None:
        rows = rows.filter(document_id__in=list(filters.document_ids))
    if filters.pages is not None:
        rows = rows.filter(page__gte=filters.pages[0], page__lte=filters.pages[1])
    return rows


class NumpyVectors:
    """Exact cosine similarity over every stored vector of the base (they are normalised, so
    one matrix product), for SQLite and PostgreSQL servers without pgvector. Reading the
    vectors dominates: about 0.1 s a search at 10,000 chunks of 384 dimensions, 1 s at
    100,000 (docs/knowledge.md, "Exact search, and up to what size"): fine up to about
    10,000 chunks a base; beyond, pgvector's index."""

    def nearest(
        self, base: KnowledgeBase, vector: np.ndarray, limit: int, filters: Filters
    ) -> list[int]:
        import numpy as np  # on use: its import is 0.13 s of every process's start

        rows = list(
            _chunks(base, filters).filter(dimension=vector.shape[0]).values_list("pk", "embedding")
        )
        if not rows:
            return []
        ids = np.fromiter((pk for pk, _ in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(bytes(e or b"") for _, e in rows), dtype=np.float32)
        similarity = matrix.reshape(len(rows), -1) @ vector
        best = np.argsort(-similarity, kind="stable")[:limit]
        return [int(ids[i]) for i in best]


class PgVectors:
    """pgvector's HNSW index (cosine distance, ``<=>``) over the base's chunks of the query's
    dimension: approximate nearest neighbours, in milliseconds at millions of chunks."""

    def nearest(
        self, base: KnowledgeBase, vector: np.ndarray, limit: int, filters: Filters
    ) -> list[int]:
        return nearest_chunks(base.pk, vector, limit, filters.document_ids, filters.pages)


def vector_index() -> VectorIndex:
    """The index this database searches vectors with: pgvector's where it has it."""
    return PgVectors() if pgvector_version() else NumpyVectors()


def search_indexes_description() -> str:
    """Which indexes this deployment searches with, in a sentence (the studio's knowledge
    base page and ``manage.py knowledge_indexes`` show it)."""
    version = pgvector_version()
    if version:
        vectors = f"pgvector {version} (HNSW index, cosine distance)"
    else:
        vectors = "exact search with numpy over the base's stored vectors (no pgvector here)"
    if connection.vendor == "postgresql":
        words = "PostgreSQL full-text search"
    elif has_full_text():
        words = "SQLite FTS5 (BM25)"
    else:
        words = "word overlap (this SQLite has no FTS5)"
    return f"Keywords: {words}. Meaning: {vectors}."


def keyword_ranking(base: KnowledgeBase, query: str, limit: int, filters: Filters) -> list[int]:
    """Chunk ids matching the query's words, best first (full text, or term overlap)."""
    if has_full_text() and filters.pages is None:
        return full_text_ranking(base.pk, query, limit, filters.document_ids)
    if has_full_text():  # pages filtered: rank within the allowed chunks
        allowed = set(_chunks(base, filters).values_list("pk", flat=True))
        ranked = full_text_ranking(base.pk, query, limit * 4, filters.document_ids)
        return [pk for pk in ranked if pk in allowed][:limit]
    rows = list(_chunks(base, filters).values_list("pk", "heading_path", "text"))
    order = term_overlap_ranking(query, [f"{h}\n{t}" for _, h, t in rows])
    return [rows[i][0] for i in order[:limit]]


def search(
    base: KnowledgeBase,
    query: str,
    k: int = DEFAULT_K,
    filters: Filters | None = None,
    vectors: VectorIndex | None = None,
    thread_id: str | None = None,
) -> list[Passage]:
    """The ``k`` passages of ``base`` that best answer ``query``, best first. A provider's
    embedding of the query is accounted as a Log row of ``thread_id`` (a search from a
    thread), as chat requests are; ``EmbeddingUnavailable`` when the provider cannot embed."""
    filters = filters or Filters()
    k = max(1, min(k, MAX_K))
    if not query.strip():
        return []
    keyword = keyword_ranking(base, query, CANDIDATES, filters)
    query_vector, usage = embed_query_metered(query, base.embedding_model)
    if usage is not None and thread_id:
        log_embedding(thread_id, usage, base.name)
    vector = (vectors or vector_index()).nearest(base, query_vector, CANDIDATES, filters)
    fused = reciprocal_rank_fusion([keyword, vector], RRF_K)[:k]
    found = {
        c.pk: c
        for c in KnowledgeChunk.objects.select_related("document").filter(
            pk__in=[pk for pk, _ in fused]
        )
    }
    keyword_at = {pk: i + 1 for i, pk in enumerate(keyword)}
    vector_at = {pk: i + 1 for i, pk in enumerate(vector)}
    return [
        Passage(
            chunk_id=pk,
            document_id=found[pk].document_id,
            document_title=found[pk].document.title,
            filename=found[pk].document.filename,
            heading_path=found[pk].heading_path,
            page=found[pk].page,
            text=found[pk].text,
            score=score,
            keyword_rank=keyword_at.get(pk),
            vector_rank=vector_at.get(pk),
        )
        for pk, score in fused
        if pk in found
    ]


def log_embedding(thread_id: str, usage: EmbeddingUsage, base_name: str) -> None:
    """A provider's embeddings request as a Log row of the thread: tokens, cost, latency
    (counted in the thread's cost and the usage limits as a chat request is)."""
    Log.objects.create(
        thread_id=thread_id,
        kind=Log.Kind.LLM,
        provider=usage.provider,
        model=usage.model,
        model_id=usage.model_id,
        tool_name=f"knowledge:{base_name}",
        request_body={"embeddings": {"inputs": usage.inputs, "knowledgeBase": base_name}},
        response_body={"tokens": usage.tokens, "tokensReported": usage.tokens_reported},
        status_code=200,
        input_tokens=usage.tokens,
        total_tokens=usage.tokens,
        cost_input=usage.cost,
        cost_total=usage.cost,
        cost_known=usage.cost_known,
        latency_ms=usage.latency_ms,
        is_complete=True,
    )
