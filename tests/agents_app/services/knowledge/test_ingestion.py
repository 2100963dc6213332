"""Ingestion on the database: a document becomes ready with embedded chunks; a second run
and a duplicate task do nothing; a dead worker's half-done document resumes where it stopped;
new bytes re-index; a deleted document leaves no chunk and no file; a broken one fails in
words."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from agents_app.models import DocumentStatus, KnowledgeBase, KnowledgeChunk, KnowledgeDocument
from agents_app.services.knowledge.documents import (
    document_add,
    document_delete,
    document_replace,
)
from agents_app.services.knowledge.ingestion import document_ingest, documents_due
from tests.agents_app.services.knowledge.sample_files import pdf_bytes

pytestmark = pytest.mark.django_db

GUIDE = b"""# Guide

Our office opens at nine. Visitors sign in at the front desk.

## Returns

Items may be sent back within thirty days. Keep the receipt and the box.

## Shipping

Parcels leave the warehouse every weekday. Express delivery costs extra.
"""


@pytest.fixture
def base() -> KnowledgeBase:
    return KnowledgeBase.objects.create(name="handbook", description="The staff handbook")


def _add(base: KnowledgeBase, data: bytes = GUIDE, name: str = "guide.md") -> KnowledgeDocument:
    return document_add(base=base, filename=name, content_type="text/markdown", data=data)


def _chunks(document: KnowledgeDocument) -> list[KnowledgeChunk]:
    return list(KnowledgeChunk.objects.filter(document_id=document.pk).order_by("ordinal"))


def test_a_document_is_parsed_chunked_embedded_and_ready(base: KnowledgeBase) -> None:
    document = _add(base)
    assert document.status == DocumentStatus.QUEUED and document.progress == 0.0
    assert document_ingest(document.pk) == DocumentStatus.READY
    document.refresh_from_db()
    chunks = _chunks(document)
    assert document.status == DocumentStatus.READY and document.progress == 1.0
    assert document.chunk_count == document.chunks_embedded == len(chunks) == 3
    assert [c.heading_path for c in chunks] == ["Guide", "Guide › Returns", "Guide › Shipping"]
    vector = np.frombuffer(bytes(chunks[1].embedding), dtype=np.float32)
    assert chunks[1].dimension == vector.shape[0] == 384
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-3)


def test_running_the_ingestion_twice_changes_nothing(base: KnowledgeBase) -> None:
    document = _add(base)
    document_ingest(document.pk)
    before = [(c.pk, bytes(c.embedding)) for c in _chunks(document)]
    assert document_ingest(document.pk) == "skipped"  # a duplicate task
    assert [(c.pk, bytes(c.embedding)) for c in _chunks(document)] == before


def test_a_dead_workers_half_done_document_resumes_where_it_stopped(base: KnowledgeBase) -> None:
    document = _add(base)
    document_ingest(document.pk)
    first, _, last = _chunks(document)
    # The worker died after embedding the first two chunks: the third was never written.
    last.delete()
    marker = np.full(384, 1 / np.sqrt(384), dtype=np.float32).tobytes()
    KnowledgeChunk.objects.filter(pk=first.pk).update(embedding=marker)
    long_ago = timezone.now() - timedelta(hours=1)
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        status=DocumentStatus.EMBEDDING, chunks_embedded=2, claimed_at=long_ago
    )
    assert document.pk in documents_due()
    assert document_ingest(document.pk) == DocumentStatus.READY
    chunks = _chunks(document)
    assert [c.ordinal for c in chunks] == [0, 1, 2]
    assert chunks[0].pk == first.pk and bytes(chunks[0].embedding) == marker  # kept, not redone
    assert chunks[2].text == last.text and chunks[2].dimension == 384  # the missing one made
    assert document.pk not in documents_due()


def test_a_live_workers_document_is_not_taken(base: KnowledgeBase) -> None:
    document = _add(base)
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        status=DocumentStatus.PARSING, claimed_at=timezone.now()
    )
    assert document_ingest(document.pk) == "skipped"
    assert document.pk not in documents_due()
    assert not _chunks(document)


def test_a_lost_task_is_found_by_the_sweep(base: KnowledgeBase) -> None:
    document = _add(base)
    assert document.pk not in documents_due()  # just queued: its task is on its way
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        updated_at=timezone.now() - timedelta(hours=1)
    )
    assert document.pk in documents_due()


def test_new_bytes_re_index_the_document_and_the_same_bytes_do_not(base: KnowledgeBase) -> None:
    document = _add(base)
    document_ingest(document.pk)
    assert not document_replace(
        document=document, filename="guide.md", content_type="text/markdown", data=GUIDE
    )
    changed = GUIDE.replace(b"thirty days", b"sixty days")
    assert document_replace(
        document=document, filename="guide.md", content_type="text/markdown", data=changed
    )
    document.refresh_from_db()
    assert document.status == DocumentStatus.QUEUED and not _chunks(document)
    assert document_ingest(document.pk) == DocumentStatus.READY
    texts = [c.text for c in _chunks(document)]
    assert any("sixty days" in t for t in texts)
    assert not any("thirty days" in t for t in texts)


def test_deleting_a_document_removes_every_chunk_and_its_file(
    base: KnowledgeBase, django_capture_on_commit_callbacks: object
) -> None:
    document = _add(base)
    document_ingest(document.pk)
    storage, name = document.file.storage, document.file.name
    assert storage.exists(name)
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        document_delete(document=document)
    assert not KnowledgeChunk.objects.filter(document_id=document.pk).exists()
    assert not storage.exists(name)


def test_a_document_with_no_text_fails_with_a_reason_in_words(base: KnowledgeBase) -> None:
    document = _add(base, pdf_bytes([[]]), "scan.pdf")
    assert document_ingest(document.pk) == DocumentStatus.FAILED
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED
    assert document.failure.startswith("No text was found in scan.pdf")
    broken = _add(base, b"PK\x03\x04 not really a zip", "broken.docx")
    document_ingest(broken.pk)
    broken.refresh_from_db()
    assert "could not be read as DOCX" in broken.failure


def test_unsupported_uploads_are_refused_with_a_sentence(base: KnowledgeBase) -> None:
    from agents_app.base.errors import Invalid

    with pytest.raises(Invalid, match="tool.exe is not a format we read"):
        document_add(base=base, filename="tool.exe", content_type="", data=b"MZ")
    with pytest.raises(Invalid, match="empty.txt is empty"):
        document_add(base=base, filename="empty.txt", content_type="", data=b"")


def test_a_slow_worker_taken_for_dead_stops_writing_and_does_not_fail_the_document(
    base: KnowledgeBase,
) -> None:
    from agents_app.services.knowledge import ingestion

    document = _add(base)
    assert ingestion.document_claim(document.pk)
    slow = KnowledgeDocument.objects.get(pk=document.pk)
    # Another worker took it over (the slow one's heartbeat had gone stale).
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        claimed_at=timezone.now() + timedelta(seconds=1)
    )
    with pytest.raises(ingestion.Superseded):
        ingestion._ingest(slow)
    assert ingestion._fail(slow, "boom") == "superseded"
    document.refresh_from_db()
    assert document.status == DocumentStatus.PARSING and document.failure == ""
    assert not _chunks(document)
