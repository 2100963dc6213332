"""What a person reaches of the knowledge an answer cites (docs/knowledge.md, "Citations"):
a reply's knowledge citations name a passage by id, and the chat opens it at
``/chat/passages/<id>/``. The retrieval before each turn itself runs in the engine
(``runtime/step/knowledge_context.py``) through the same search as the ``knowledge:`` tool
(``tool_host.py``), with the rights of the thread's owner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents_app.models.knowledge import DocumentStatus, KnowledgeChunk
from agents_app.services.knowledge.audience import bases_for


@dataclass(frozen=True)
class PassageView:
    """A cited passage as the person reads it (the text as stored: the page escapes it)."""

    id: int
    base: str
    document: str
    heading: str
    page: int | None
    text: str


def passage_for(*, user: Any, passage_id: int) -> PassageView | None:
    """The passage if ``user`` may search its base (the base's audience, published, the
    document ready); ``None`` otherwise, as if it did not exist."""
    chunk = (
        KnowledgeChunk.objects.select_related("document__base")
        .filter(
            pk=passage_id,
            document__status=DocumentStatus.READY,
            document__base__in=bases_for(user),
        )
        .first()
    )
    if chunk is None:
        return None
    return PassageView(
        id=chunk.pk,
        base=chunk.document.base.name,
        document=chunk.document.title,
        heading=chunk.heading_path,
        page=chunk.page,
        text=chunk.text,
    )
