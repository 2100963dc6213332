"""The keyword side of a knowledge base's hybrid search on PostgreSQL: the chunks of a
base's ready documents whose ``search_vector`` (a generated tsvector over the heading path,
weight A, and the text, weight B, with a GIN index: migration ``0032_knowledge_bases``)
matches ``websearch_to_tsquery``, ranked by ``ts_rank_cd`` (cover density: words of the query
close together rank higher). Other databases have no such column: the caller ranks by term
overlap there (``runtime/knowledge/keywords.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from agents_app.models.knowledge import DocumentStatus

# The GIN index serves the ``@@``; the rank is computed for the matches only.
_RANKED = """
SELECT c.id
FROM agents_app_knowledgechunk c
JOIN agents_app_knowledgedocument d ON d.id = c.document_id
WHERE d.base_id = %s AND d.status = %s {documents}
  AND c.search_vector @@ websearch_to_tsquery('english', %s)
ORDER BY ts_rank_cd(c.search_vector, websearch_to_tsquery('english', %s)) DESC, c.id
LIMIT %s
"""


def has_full_text() -> bool:
    """Whether the database ranks full text itself (PostgreSQL)."""
    return connection.vendor == "postgresql"


def full_text_ranking(
    base_id: int, query: str, limit: int, document_ids: Sequence[int] | None = None
) -> list[int]:
    """Chunk ids of base ``base_id`` matching ``query``, best first (PostgreSQL only)."""
    params: list[Any] = [base_id, str(DocumentStatus.READY)]
    documents = ""
    if document_ids is not None:
        documents = "AND d.id = ANY(%s)"
        params.append(list(document_ids))
    params += [query, query, limit]
    with connection.cursor() as cursor:
        cursor.execute(_RANKED.format(documents=documents), params)
        return [row[0] for row in cursor.fetchall()]
