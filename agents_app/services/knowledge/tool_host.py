"""The engine's ``KnowledgeBases`` (``runtime/tools/knowledge_tools.py``) over the knowledge
tables: a prompt's ``knowledge:<name>`` tool searches here (docs/knowledge.md)."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db import connection
from django.urls import NoReverseMatch, reverse

from agents_app.models import Thread
from agents_app.models.knowledge import KnowledgeBase
from agents_app.services.knowledge.audience import bases_for
from agents_app.services.knowledge.embedding import EmbeddingUnavailable
from agents_app.services.knowledge.search import Passage, search
from runtime.tools.knowledge_tools import Citation, KnowledgeBaseInfo, KnowledgeUnavailable


def document_link(document_id: int) -> str:
    """Where a person opens a document: its page in the studio."""
    try:
        return reverse("admin:agents_app_knowledgedocument_change", args=[document_id])
    except NoReverseMatch:  # the studio is not mounted (a worker-only set-up)
        return f"/admin/agents_app/knowledgedocument/{document_id}/change/"


def citation(passage: Passage) -> Citation:
    return Citation(
        text=passage.text,
        document=passage.document_title,
        heading=passage.heading_path,
        page=passage.page,
        link=document_link(passage.document_id),
        score=round(passage.score, 5),
        passage_id=passage.chunk_id,
    )


def _base_info(name: str) -> KnowledgeBaseInfo | None:
    row = KnowledgeBase.objects.filter(name=name).values_list("description", flat=True).first()
    return None if row is None else KnowledgeBaseInfo(name, row)


def _reachable(name: str, thread_id: str) -> KnowledgeBase:
    """The base, searched with the rights of the thread's owner (docs/knowledge.md,
    "Publishing and audience"): a draft or another audience's base is refused in words."""
    if not KnowledgeBase.objects.filter(name=name).exists():
        raise KnowledgeUnavailable("it no longer exists.")
    thread = (
        Thread.objects.select_related("owner").filter(pk=thread_id).first() if thread_id else None
    )
    owner = thread.owner if thread is not None else None  # ownerless: the public audience
    base = bases_for(owner).filter(name=name).first()
    if base is None:
        raise KnowledgeUnavailable(
            "the person this conversation belongs to is not in its audience (or it is a "
            "draft), so it cannot be searched for them."
        )
    return base


def _search(name: str, query: str, k: int, thread_id: str) -> list[Citation]:
    try:
        base = _reachable(name, thread_id)
        try:
            found = search(base, query, k, thread_id=thread_id or None)
        except EmbeddingUnavailable:
            # The reason (which may name an env value) is for staff: the document pages and
            # the logs show it; the model and the person read this.
            raise KnowledgeUnavailable(
                "its embedding model cannot be reached now; ask an administrator."
            ) from None
        return [citation(p) for p in found]
    finally:
        connection.close()  # this pool thread's own connection


class DjangoKnowledgeBases:
    """``KnowledgeBases`` over the ORM (each call one sync function off the event loop)."""

    async def base(self, name: str) -> KnowledgeBaseInfo | None:
        return await sync_to_async(_base_info)(name)

    async def search(self, name: str, query: str, k: int, *, thread_id: str = "") -> list[Citation]:
        # Off the shared sync thread: embedding the query takes a CPU's tenth of a second or
        # more, and every ORM call of this process's sessions waits behind that thread.
        return await sync_to_async(_search, thread_sensitive=False)(name, query, k, thread_id)
