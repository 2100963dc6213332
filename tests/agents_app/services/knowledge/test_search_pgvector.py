"""Knowledge search on a real PostgreSQL with pgvector (docs/knowledge.md, "Which indexes a
deployment uses"): the ``pgserver`` wheel's PostgreSQL 16 with the ``vector``
extension, started once for this module on a unix socket of its own, migrated like any test
database, and the default connection pointed at it for the module (then pointed back).

The hybrid search's three cases hold with pgvector's HNSW index as the vector side, and the
``<=>`` query is the one that ran; a deleted document leaves no vector row; a changed
embedding model re-embeds into the new dimension, with an index of its own.
"""

from __future__ import annotations

import copy
import logging
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents_app.db import knowledge_vectors
from agents_app.models import KnowledgeBase, KnowledgeChunk, KnowledgeDocument, LanguageModel
from agents_app.services.knowledge.bases import base_save, parse_definition
from agents_app.services.knowledge.documents import document_add, document_delete
from agents_app.services.knowledge.embedding import embed_query
from agents_app.services.knowledge.ingestion import document_ingest
from agents_app.services.knowledge.search import (
    Filters,
    PgVectors,
    keyword_ranking,
    search,
    search_indexes_description,
    vector_index,
)
from tests.agents_app.services.knowledge.embedding_server import DIMENSIONS, embedding_server
from tests.agents_app.services.knowledge.test_search import HANDBOOK, RETURNS

pytestmark = [
    pytest.mark.postgresql("a PostgreSQL server with pgvector, started here"),
    pytest.mark.integration,  # that server is a process of its own
]


@pytest.fixture(scope="module")
def pgvector_db(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR here, /tmp it is
        warnings.simplefilter("ignore")
        import pgserver

    # Its INFO lines would also be written at exit, after pytest closed the streams.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    # Not under pytest's base temp: concurrent pytest runs of the same user prune those.
    data = tempfile.mkdtemp(prefix="pgvector-")
    server = pgserver.get_server(data, cleanup_mode="stop")
    info = server.get_postmaster_info()
    saved = copy.deepcopy(connection.settings_dict)
    try:
        with django_db_blocker.unblock():
            connection.close()
            connection.settings_dict.update(
                NAME="postgres",
                USER="postgres",
                PASSWORD="",
                HOST=str(info.socket_dir),
                PORT=str(info.port),
                TEST={**saved["TEST"], "NAME": "test_knowledge_pgvector"},
            )
            old_name = connection.creation.create_test_db(
                verbosity=0, autoclobber=True, serialize=False
            )
            knowledge_vectors.forget()
        yield
        with django_db_blocker.unblock():
            connection.creation.destroy_test_db(old_name, verbosity=0)
    finally:
        with django_db_blocker.unblock():
            connection.close()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)
            knowledge_vectors.forget()
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="module")
def base(pgvector_db: None, django_db_blocker: Any) -> Iterator[KnowledgeBase]:
    with django_db_blocker.unblock():
        base = KnowledgeBase.objects.create(name="handbook")
        for name, data in (("handbook.md", HANDBOOK), ("returns.md", RETURNS)):
            document = document_add(base=base, filename=name, content_type="", data=data)
            assert document_ingest(document.pk) == "ready"
    yield base
    with django_db_blocker.unblock():
        base.delete()


def _vector_rows(chunk_ids: list[int] | None = None) -> list[tuple[int, int]]:
    sql = f"SELECT chunk_id, dimension FROM {knowledge_vectors.TABLE}"
    params: list[Any] = []
    if chunk_ids is not None:
        sql += " WHERE chunk_id = ANY(%s)"
        params.append(chunk_ids)
    with connection.cursor() as cursor:
        cursor.execute(sql + " ORDER BY chunk_id", params)
        return [(row[0], row[1]) for row in cursor.fetchall()]


def _searched(base: KnowledgeBase, query: str, k: int) -> tuple[list[Any], list[str]]:
    with CaptureQueriesContext(connection) as ran:
        found = search(base, query, k=k)
    return found, [q["sql"] for q in ran.captured_queries]


def _used_pgvector(sqls: list[str], dimension: int = 384) -> bool:
    return any(
        "<=>" in sql and f"::vector({dimension})" in sql and "knowledgevector" in sql
        for sql in sqls
    )


def test_the_vector_index_is_pgvector_and_every_chunk_has_its_row(
    base: KnowledgeBase, db: None
) -> None:
    assert isinstance(vector_index(), PgVectors)
    assert "pgvector 0." in search_indexes_description()
    chunks = sorted(KnowledgeChunk.objects.filter(document__base=base).values_list("pk", flat=True))
    assert _vector_rows() == [(pk, 384) for pk in chunks]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'knowledge_vector_hnsw_384'"
        )
        [(definition,)] = cursor.fetchall()
    assert "hnsw" in definition and "vector_cosine_ops" in definition


def test_the_studio_page_and_the_command_say_which_indexes(
    base: KnowledgeBase, client: Client, ops: Any
) -> None:
    client.force_login(ops)
    page = client.get(reverse("admin:agents_app_knowledgebase_change", args=[base.pk]))
    assert "Meaning: pgvector 0." in page.content.decode()
    out = StringIO()
    call_command("knowledge_indexes", stdout=out)
    assert out.getvalue().startswith("Keywords: PostgreSQL full-text search. Meaning: pgvector")


def test_a_query_only_the_keyword_side_answers_on_pgvector(base: KnowledgeBase, db: None) -> None:
    query = "Okonkwo orders"
    [kitchen] = keyword_ranking(base, query, 50, Filters())
    vector = PgVectors().nearest(base, embed_query(query), 50, Filters())
    assert vector.index(kitchen) >= 3  # the look-alike contact lines come first by meaning
    top, sqls = _searched(base, query, 3)
    assert _used_pgvector(sqls)
    assert top[0].chunk_id == kitchen and top[0].heading_path == "Kitchen"
    assert top[0].keyword_rank == 1 and top[0].vector_rank == vector.index(kitchen) + 1


def test_a_paraphrase_only_the_vector_side_answers_on_pgvector(
    base: KnowledgeBase, db: None
) -> None:
    query = "what if I regret buying something"
    assert keyword_ranking(base, query, 50, Filters()) == []
    top, sqls = _searched(base, query, 3)
    assert _used_pgvector(sqls)
    assert top[0].document_title == "returns" and "thirty days" in top[0].text
    assert (top[0].keyword_rank, top[0].vector_rank) == (None, 1)


def test_the_fused_order_is_reciprocal_rank_fusion_on_pgvector(
    base: KnowledgeBase, db: None
) -> None:
    found, sqls = _searched(base, "Okonkwo orders", 4)
    assert _used_pgvector(sqls)
    for passage in found:
        expected = sum(1 / (60 + r) for r in (passage.keyword_rank, passage.vector_rank) if r)
        assert passage.score == pytest.approx(expected)
    assert found[0].keyword_rank == 1 and found[0].vector_rank is not None
    assert [p.vector_rank for p in found[1:]] == [1, 2, 3]


def test_filters_and_readiness_apply_to_the_pgvector_side(base: KnowledgeBase, db: None) -> None:
    returns = KnowledgeDocument.objects.get(base=base, filename="returns.md")
    only = Filters(document_ids=[returns.pk])
    ids = PgVectors().nearest(base, embed_query("Okonkwo orders"), 50, only)
    assert set(KnowledgeChunk.objects.filter(pk__in=ids).values_list("document", flat=True)) == {
        returns.pk
    }
    KnowledgeDocument.objects.filter(base=base, filename="handbook.md").update(status="embedding")
    assert {p.filename for p in search(base, "Okonkwo orders", k=5)} == {"returns.md"}


def test_a_deleted_document_leaves_no_vector_row(base: KnowledgeBase, db: None) -> None:
    handbook = KnowledgeDocument.objects.get(base=base, filename="handbook.md")
    chunks = list(handbook.chunks.values_list("pk", flat=True))
    assert len(_vector_rows(chunks)) == len(chunks) > 0
    document_delete(document=handbook)
    assert _vector_rows(chunks) == []
    assert _vector_rows() != []  # the other document's rows stay


def test_emptying_the_chunk_table_empties_the_vectors(base: KnowledgeBase, db: None) -> None:
    # Django's ``flush`` truncates every model's table: no foreign key stops it.
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE agents_app_knowledgechunk")
    assert _vector_rows() == []


def test_a_changed_embedding_model_re_embeds_into_its_dimension(
    pgvector_db: None, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with embedding_server() as (url, _seen):
        LanguageModel.objects.create(
            name="emb",
            provider="openai",
            model="text-embedding-3-small",
            base_url=f"{url}/v1",
            input_price=Decimal("0.02"),
            send_instance_key_to_base_url=True,
        )
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pgvector")
        guide, _ = base_save(parse_definition({"name": "guide"}))
        document = document_add(base=guide, filename="guide.md", content_type="", data=RETURNS)
        assert document_ingest(document.pk) == "ready"
        before = list(document.chunks.values_list("pk", flat=True))
        assert [d for _, d in _vector_rows(before)] == [384] * len(before)

        guide, queued = base_save(parse_definition({"name": "guide", "embeddingModel": "emb"}))
        assert queued == [document.pk] and _vector_rows(before) == []
        assert document_ingest(document.pk) == "ready"
        after = list(document.chunks.values_list("pk", flat=True))
        assert [d for _, d in _vector_rows(after)] == [DIMENSIONS] * len(after)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT to_regclass(%s) IS NOT NULL", [f"knowledge_vector_hnsw_{DIMENSIONS}"]
            )
            assert cursor.fetchone()[0]

        found, sqls = _searched(guide, "refund within thirty days", 1)
        assert _used_pgvector(sqls, DIMENSIONS)
        assert found[0].heading_path == "Returns" and found[0].vector_rank == 1
