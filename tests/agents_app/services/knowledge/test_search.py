"""Hybrid search (docs/knowledge.md, "How search works"): a query only the keyword side
answers, a paraphrase only the vector side answers, and the fused order is reciprocal rank
fusion's (k = 60). On PostgreSQL the keyword side is full-text search; on SQLite, FTS5: the
same assertions hold on both (``test_search_sqlite_fts5.py``), and with pgvector as the vector
side (``test_search_pgvector.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.db import knowledge_vectors
from agents_app.models import KnowledgeBase, KnowledgeDocument
from agents_app.services.knowledge.documents import document_add
from agents_app.services.knowledge.embedding import embed_query
from agents_app.services.knowledge.ingestion import document_ingest
from agents_app.services.knowledge.search import (
    Filters,
    NumpyVectors,
    keyword_ranking,
    search,
    search_indexes_description,
    vector_index,
)

pytestmark = pytest.mark.django_db

# Short contact lines with names like the one asked for, and the answer inside a long
# paragraph about something else: the embedding prefers the short look-alikes, the words
# find the one chunk that has the name.
HANDBOOK = b"""# Payroll

Ask Okafor about payroll.

# Laptops

Ask Okonjo about laptops.

# Parking

Ask Okoro about parking.

# Keys

Ask Onwuka about keys.

# Kitchen

The kitchen is cleaned on Fridays and the fridge is emptied before the weekend. Milk and
coffee are ordered on Mondays by whoever is on the rota; when it runs out, Okonkwo orders more
from the shop on the corner, which delivers the same day.
"""
RETURNS = b"""# Returns

Customers may send purchases back within thirty days for a full refund.
"""


@pytest.fixture(scope="module")
def base(django_db_setup: Any, django_db_blocker: Any) -> Iterator[KnowledgeBase]:
    # Ingested once for the module (embedding is the slow part); each test runs in a
    # transaction that is rolled back, so what one changes the next does not see.
    with django_db_blocker.unblock():
        base = KnowledgeBase.objects.create(name="handbook")
        for name, data in (("handbook.md", HANDBOOK), ("returns.md", RETURNS)):
            document = document_add(base=base, filename=name, content_type="", data=data)
            assert document_ingest(document.pk) == "ready"
    yield base
    with django_db_blocker.unblock():
        base.delete()


def _vector_ranking(base: KnowledgeBase, query: str) -> list[int]:
    return NumpyVectors().nearest(base, embed_query(query), 50, Filters())


def test_a_query_only_the_keyword_side_answers(base: KnowledgeBase) -> None:
    query = "Okonkwo orders"
    keyword = keyword_ranking(base, query, 50, Filters())
    vector = _vector_ranking(base, query)
    [kitchen] = keyword  # the only chunk holding the name
    assert vector.index(kitchen) >= 3  # the look-alike contact lines come first by meaning
    top = search(base, query, k=3)
    assert top[0].chunk_id == kitchen and top[0].heading_path == "Kitchen"
    assert top[0].keyword_rank == 1 and top[0].vector_rank == vector.index(kitchen) + 1


def test_a_paraphrase_only_the_vector_side_answers(base: KnowledgeBase) -> None:
    query = "what if I regret buying something"
    assert keyword_ranking(base, query, 50, Filters()) == []  # no chunk has those words
    top = search(base, query, k=3)
    assert top[0].document_title == "returns"
    assert "thirty days" in top[0].text
    assert (top[0].keyword_rank, top[0].vector_rank) == (None, 1)


def test_the_fused_order_is_reciprocal_rank_fusion(base: KnowledgeBase) -> None:
    found = search(base, "Okonkwo orders", k=4)
    for passage in found:
        expected = sum(1 / (60 + r) for r in (passage.keyword_rank, passage.vector_rank) if r)
        assert passage.score == pytest.approx(expected)
    assert [p.score for p in found] == sorted((p.score for p in found), reverse=True)
    # In both rankings (1st and low) beats first in one only; then the vector side's order.
    assert found[0].keyword_rank == 1 and found[0].vector_rank is not None
    assert [p.vector_rank for p in found[1:]] == [1, 2, 3]


def test_filters_keep_to_the_documents_asked_for(base: KnowledgeBase) -> None:
    returns = KnowledgeDocument.objects.get(filename="returns.md")
    only = Filters(document_ids=[returns.pk])
    found = search(base, "Okonkwo orders", k=5, filters=only)
    assert {p.document_id for p in found} == {returns.pk}
    assert search(base, "   ", k=5) == []


def test_documents_not_ready_are_not_searched(base: KnowledgeBase) -> None:
    KnowledgeDocument.objects.filter(filename="handbook.md").update(status="embedding")
    found = search(base, "Okonkwo orders", k=5)
    assert {p.filename for p in found} == {"returns.md"}


def test_without_pgvector_the_vector_side_is_exact_numpy_search(base: KnowledgeBase) -> None:
    # This suite's PostgreSQL (or SQLite) has no pgvector: the migration went through all the
    # same and the search reads the vectors (test_search_pgvector.py runs on one that has it).
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            if cursor.fetchone():
                pytest.skip("this PostgreSQL offers pgvector: test_search_pgvector.py covers it")
    assert knowledge_vectors.install(connection) is False
    assert isinstance(vector_index(), NumpyVectors)
    assert "exact search with numpy" in search_indexes_description()
    with CaptureQueriesContext(connection) as ran:
        assert search(base, "Okonkwo orders", k=3)
    assert not any("<=>" in q["sql"] for q in ran.captured_queries)
