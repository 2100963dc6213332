"""Ingestion: one document parsed, chunked, embedded and indexed (docs/knowledge.md).

Work is claimed with a conditional ``UPDATE`` that must change one row: a ``queued``
document, or one left in ``parsing``/``embedding`` whose heartbeat (``claimed_at``) is older
than ``STUDIO_KNOWLEDGE_STALE_SECONDS`` (its worker died). A task delivered twice therefore
runs once, and a dead worker's document is taken up again by the sweep.

Resuming keeps what is done: the chunks are computed again from the file (cheap, and the
same bytes give the same chunks), the stored chunks whose text, headings and page still match
keep their embeddings, and only the rest are embedded, a batch at a time, each batch written
with the document's progress and heartbeat in one transaction. A document whose bytes were
replaced meanwhile (its hash changed) is not written to: its new ingestion owns it.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents_app.db.knowledge_vectors import pgvector_version, vectors_store
from agents_app.models.knowledge import DocumentStatus, KnowledgeChunk, KnowledgeDocument
from agents_app.services.knowledge.embedding import (
    EmbeddingUnavailable,
    embed_passages_metered,
    passage_text,
)
from agents_app.services.knowledge.parsing import UnreadableDocument, parse_document
from runtime.knowledge.chunking import Chunk, chunk_sections

logger = logging.getLogger("agents_app.knowledge")
BATCH = 8  # chunks embedded per write: the heartbeat's and the progress bar's step
ACTIVE = (DocumentStatus.PARSING, DocumentStatus.EMBEDDING)


class Superseded(Exception):
    """The document was replaced or deleted while it was being ingested."""


def _stale_before() -> object:
    return timezone.now() - timedelta(seconds=settings.STUDIO_KNOWLEDGE_STALE_SECONDS)


def document_claim(document_id: int) -> bool:
    """Take ``document_id`` for ingestion; ``False`` when it is not waiting (ready, failed,
    gone) or another worker holds it and is alive."""
    waiting = Q(status=DocumentStatus.QUEUED) | Q(status__in=ACTIVE, claimed_at__lt=_stale_before())
    claimed = KnowledgeDocument.objects.filter(waiting, pk=document_id).update(
        status=DocumentStatus.PARSING, claimed_at=timezone.now(), failure=""
    )
    return claimed == 1


def documents_due() -> list[int]:
    """Documents the sweep hands to the workers: queued ones whose task may be lost (queued
    for longer than ``STUDIO_KNOWLEDGE_REQUEUE_SECONDS``) and dead workers' half-done ones."""
    lost = timezone.now() - timedelta(seconds=settings.STUDIO_KNOWLEDGE_REQUEUE_SECONDS)
    due = Q(status=DocumentStatus.QUEUED, updated_at__lt=lost) | Q(
        status__in=ACTIVE, claimed_at__lt=_stale_before()
    )
    return list(KnowledgeDocument.objects.filter(due).values_list("pk", flat=True)[:100])


def document_ingest(document_id: int) -> str:
    """Claim and ingest one document; its final status (or ``skipped`` when not claimed)."""
    if not document_claim(document_id):
        return "skipped"
    document = KnowledgeDocument.objects.select_related("base").get(pk=document_id)
    try:
        _ingest(document)
    except Superseded:
        return "superseded"
    except (UnreadableDocument, EmbeddingUnavailable) as exc:
        return _fail(document, str(exc))
    except Exception as exc:
        logger.exception("knowledge document %s failed", document_id)
        return _fail(document, f"Indexing stopped on an unexpected error ({type(exc).__name__}).")
    return DocumentStatus.READY


def _ingest(document: KnowledgeDocument) -> None:
    with document.file.open("rb") as f:
        data = f.read()
    chunks = chunk_sections(parse_document(data, document.filename, document.content_type))
    if not chunks:
        raise UnreadableDocument(
            f"No text was found in {document.filename} (a scanned PDF needs text recognition "
            "first)."
        )
    todo = _keep_matching(document, chunks)
    for start in range(0, len(todo), BATCH):
        batch = todo[start : start + BATCH]
        vectors, usage = embed_passages_metered(
            [passage_text(c.text, c.heading_path) for c in batch], document.base.embedding_model
        )
        rows = [
            KnowledgeChunk(
                document=document,
                ordinal=c.ordinal,
                text=c.text,
                heading_path=c.heading_path,
                page=c.page,
                embedding=v.tobytes(),
                dimension=v.shape[0],
            )
            for c, v in zip(batch, vectors, strict=True)
        ]
        with transaction.atomic():
            _still_ours(document)
            KnowledgeChunk.objects.bulk_create(rows)
            if pgvector_version():  # pgvector's index, in the same transaction
                vectors_store(
                    document.base_id, [(r.pk, v) for r, v in zip(rows, vectors, strict=True)]
                )
            document.chunks_embedded = len(chunks) - len(todo) + start + len(batch)
            if usage is not None:  # a provider's API: what it cost (docs/knowledge.md)
                document.embedding_tokens += usage.tokens
                document.embedding_cost += usage.cost
            _progress(document, DocumentStatus.EMBEDDING)
    with transaction.atomic():
        _still_ours(document)
        document.claimed_at = None
        _progress(document, DocumentStatus.READY)


def _keep_matching(document: KnowledgeDocument, chunks: list[Chunk]) -> list[Chunk]:
    """Delete the stored chunks that no longer match; the chunks still to embed."""
    wanted = {c.ordinal: (c.text, c.heading_path, c.page) for c in chunks}
    kept: set[int] = set()
    stale: list[int] = []
    for pk, ordinal, text, heading, page, dimension in document.chunks.values_list(
        "pk", "ordinal", "text", "heading_path", "page", "dimension"
    ):
        if dimension and wanted.get(ordinal) == (text, heading, page):
            kept.add(ordinal)
        else:
            stale.append(pk)
    with transaction.atomic():
        _still_ours(document)
        KnowledgeChunk.objects.filter(pk__in=stale).delete()
        document.chunk_count, document.chunks_embedded = len(chunks), len(kept)
        _progress(document, DocumentStatus.EMBEDDING)
    return [c for c in chunks if c.ordinal not in kept]


def _still_ours(document: KnowledgeDocument) -> None:
    """Lock the row; ``Superseded`` when its bytes were replaced, it was deleted, or another
    worker took it over (its heartbeat is no longer the one this worker last wrote: this one
    was slow enough to be taken for dead)."""
    now = (
        KnowledgeDocument.objects.select_for_update()
        .filter(pk=document.pk)
        .values_list("content_hash", "claimed_at")
        .first()
    )
    if now != (document.content_hash, document.claimed_at):
        raise Superseded


def _progress(document: KnowledgeDocument, status: str) -> None:
    document.status = status
    if status != DocumentStatus.READY:
        document.claimed_at = timezone.now()  # the heartbeat, checked by ``_still_ours``
    document.save(
        update_fields=[
            "status",
            "chunk_count",
            "chunks_embedded",
            "claimed_at",
            "embedding_tokens",
            "embedding_cost",
            "updated_at",
        ]
    )


def _fail(document: KnowledgeDocument, reason: str) -> str:
    # Only while it is still this worker's (the same bytes, its own heartbeat).
    failed = KnowledgeDocument.objects.filter(
        pk=document.pk, content_hash=document.content_hash, claimed_at=document.claimed_at
    ).update(
        status=DocumentStatus.FAILED, failure=reason, claimed_at=None, updated_at=timezone.now()
    )
    return DocumentStatus.FAILED if failed else "superseded"
