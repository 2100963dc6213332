"""Knowledge bases and their documents: created, replaced, deleted (docs/knowledge.md).

A document is stored through the app's file storage with the SHA-256 of its bytes; adding or
replacing one leaves it ``queued`` for the workers (the caller enqueues it after the commit:
``orchestration/knowledge_ingest.py``). Replacing it with the same bytes changes nothing;
with new bytes it is indexed again. Deleting a document deletes its chunks (a cascade) and
its stored file.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePath

from django.core.files.base import ContentFile
from django.db import transaction

from agents_app.base.errors import Invalid
from agents_app.models.knowledge import DocumentStatus, KnowledgeBase, KnowledgeDocument
from agents_app.services.knowledge.parsing import SUPPORTED, document_format

MAX_DOCUMENT_BYTES = 50 * 1024 * 1024


def upload_problem(filename: str, content_type: str, size: int) -> str | None:
    """Why an upload cannot be a document, in a sentence; ``None`` when it can."""
    name = PurePath(filename.replace("\\", "/")).name.strip()
    if not name:
        return "The document needs a file name."
    if document_format(name, content_type) is None:
        return f"{name} is not a format we read: use {SUPPORTED}."
    if not size:
        return f"{name} is empty."
    if size > MAX_DOCUMENT_BYTES:
        return f"{name} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB."
    return None


def _checked(filename: str, content_type: str, data: bytes) -> str:
    problem = upload_problem(filename, content_type, len(data))
    if problem is not None:
        raise Invalid(problem)
    return PurePath(filename.replace("\\", "/")).name.strip()


def document_add(
    *, base: KnowledgeBase, filename: str, content_type: str, data: bytes, title: str = ""
) -> KnowledgeDocument:
    """Store a new document of ``base``, queued for ingestion."""
    name = _checked(filename, content_type, data)
    document = KnowledgeDocument(
        base=base,
        title=title.strip() or PurePath(name).stem,
        filename=name,
        content_type=content_type or "application/octet-stream",
        size=len(data),
        content_hash=hashlib.sha256(data).hexdigest(),
    )
    document.file.save(name, ContentFile(data), save=False)
    document.save()
    return document


def document_replace(
    *, document: KnowledgeDocument, filename: str, content_type: str, data: bytes
) -> bool:
    """Give ``document`` new bytes; ``True`` when they differ and it is queued to be indexed
    again (its old chunks are deleted now: they would answer from a text that is gone)."""
    name = _checked(filename, content_type, data)
    digest = hashlib.sha256(data).hexdigest()
    if digest == document.content_hash:
        return False
    old = document.file.name
    with transaction.atomic():
        document.chunks.all().delete()
        document.filename, document.content_type = name, content_type or document.content_type
        document.size, document.content_hash = len(data), digest
        document.status, document.failure = DocumentStatus.QUEUED, ""
        document.chunk_count = document.chunks_embedded = 0
        document.claimed_at = None
        document.file.save(name, ContentFile(data), save=False)
        document.save()
    if old and old != document.file.name:
        transaction.on_commit(lambda: document.file.storage.delete(old))
    return True


def document_delete(*, document: KnowledgeDocument) -> None:
    """Delete ``document``, every chunk of it, and its stored file (after the commit)."""
    name, storage = document.file.name, document.file.storage
    document.delete()  # the chunks go with it (ON DELETE CASCADE in Django's collector)
    if name:
        transaction.on_commit(lambda: storage.delete(name))


def document_requeue(*, document: KnowledgeDocument) -> None:
    """Queue ``document`` to be indexed again from its stored bytes (a failed one, or after
    the parser improved); its chunks are kept until the new ones replace them."""
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        status=DocumentStatus.QUEUED, failure="", claimed_at=None
    )


def base_delete(*, base: KnowledgeBase) -> None:
    """Delete ``base``, its documents, their chunks and their stored files."""
    with transaction.atomic():
        for document in base.documents.all():
            document_delete(document=document)
        base.delete()


def status_in_words(document: KnowledgeDocument) -> str:
    """How far the document has come, as a person reads it (the studio and the API)."""
    if document.status == DocumentStatus.QUEUED:
        return "Queued: waiting for a worker"
    if document.status == DocumentStatus.PARSING:
        return "Reading the document"
    if document.status == DocumentStatus.EMBEDDING:
        return f"Embedding: {document.chunks_embedded} of {document.chunk_count} passages"
    if document.status == DocumentStatus.READY:
        n = document.chunk_count
        return f"Ready: {n} passage{'' if n == 1 else 's'}"
    return f"Failed: {document.failure or 'no reason was recorded'}"
