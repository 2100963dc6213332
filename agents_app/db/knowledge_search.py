"""The keyword side of a knowledge base's hybrid search on PostgreSQL: the chunks of a
base's ready documents whose ``search_vector`` (a generated tsvector over the heading path,
weight A, and the text, weight B, with a GIN index: migration ``0032_knowledge_bases``)
holds any word of the query (``plainto_tsquery``'s words joined with OR), ranked by
``ts_rank_cd`` (cover density: more of the query's words, closer together, rank higher). Any
word, not every word: a person's question rarely has all its words in one passage (the
bench's corpus: recall@5 0.22 when every word was required), and the rank puts the passages
holding most of them first.

On SQLite (the embedded default) an FTS5 table, ``agents_app_knowledgechunk_fts``, indexes the
same two columns (external content: the chunk table's rows, kept by three triggers, Porter
stemming as PostgreSQL's ``english`` configuration stems), and ranks the chunks holding any
word of the query (stop words aside) by BM25, the heading weighing twice the text. ``install_fts5`` creates it (migration ``0036``, and after every
``migrate``: Django alters a SQLite table by rebuilding it, which drops its triggers). A SQLite
built without FTS5 falls back to the term overlap in Python (``runtime/knowledge/keywords.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper

from agents_app.models.knowledge import DocumentStatus
from runtime.knowledge.keywords import terms

# The GIN index serves the ``@@``; the rank is computed for the matches only.
_RANKED = """
SELECT c.id
FROM agents_app_knowledgechunk c
JOIN agents_app_knowledgedocument d ON d.id = c.document_id
CROSS JOIN (
  SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS q
) AS query
WHERE d.base_id = %s AND d.status = %s {documents}
  AND c.search_vector @@ query.q
ORDER BY ts_rank_cd(c.search_vector, query.q) DESC, c.id
LIMIT %s
"""


FTS_TABLE = "agents_app_knowledgechunk_fts"
_FTS_RANKED = f"""
SELECT c.id
FROM {FTS_TABLE}
JOIN agents_app_knowledgechunk c ON c.id = {FTS_TABLE}.rowid
JOIN agents_app_knowledgedocument d ON d.id = c.document_id
WHERE {FTS_TABLE} MATCH %s AND d.base_id = %s AND d.status = %s {{documents}}
ORDER BY bm25({FTS_TABLE}, 2.0, 1.0), c.id
LIMIT %s
"""
_FTS_CREATE = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(heading_path, text, "
    "content='agents_app_knowledgechunk', content_rowid='id', tokenize='porter unicode61')",
    f"CREATE TRIGGER IF NOT EXISTS knowledge_fts_insert AFTER INSERT ON agents_app_knowledgechunk "
    f"BEGIN INSERT INTO {FTS_TABLE} (rowid, heading_path, text) "
    "VALUES (new.id, new.heading_path, new.text); END",
    f"CREATE TRIGGER IF NOT EXISTS knowledge_fts_delete AFTER DELETE ON agents_app_knowledgechunk "
    f"BEGIN INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, heading_path, text) "
    "VALUES ('delete', old.id, old.heading_path, old.text); END",
    f"CREATE TRIGGER IF NOT EXISTS knowledge_fts_update AFTER UPDATE ON agents_app_knowledgechunk "
    f"BEGIN INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, heading_path, text) "
    "VALUES ('delete', old.id, old.heading_path, old.text); "
    f"INSERT INTO {FTS_TABLE} (rowid, heading_path, text) "
    "VALUES (new.id, new.heading_path, new.text); END",
]
FTS_TRIGGERS = ("knowledge_fts_insert", "knowledge_fts_delete", "knowledge_fts_update")
_fts: dict[str, bool] = {}  # database file -> whether it has the FTS5 table


def has_full_text() -> bool:
    """Whether the database ranks full text itself (PostgreSQL; SQLite with FTS5)."""
    if connection.vendor == "postgresql":
        return True
    if connection.vendor != "sqlite":
        return False
    name = str(connection.settings_dict["NAME"])
    if name not in _fts:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [FTS_TABLE])
            _fts[name] = cursor.fetchone() is not None
    return _fts[name]


def install_fts5(conn: BaseDatabaseWrapper) -> bool:
    """The FTS5 table and its triggers on a SQLite database, rebuilt from the chunks when a
    trigger was missing; whether they are there (False: not SQLite, or no FTS5)."""
    if conn.vendor != "sqlite":
        return False
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
            ["agents_app_knowledgechunk"],
        )
        present = {row[0] for row in cursor.fetchall()}
        try:
            for statement in _FTS_CREATE:
                cursor.execute(statement)
        except Exception:  # a SQLite without FTS5: the term overlap stays
            return False
        if not set(FTS_TRIGGERS) <= present:
            cursor.execute(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}) VALUES ('rebuild')")
    _fts.clear()
    return True


def install_after_migrate(**kwargs: Any) -> None:
    """``post_migrate``: put back what a table rebuild dropped (SQLite)."""
    from django.db import connections

    install_fts5(connections[kwargs.get("using", "default")])


def fts5_query(query: str) -> str:
    """The FTS5 query of ``query``'s words: each quoted (no FTS5 syntax gets through), any of
    them matching, as on PostgreSQL; "" when no word counts."""
    return " OR ".join('"' + w.replace('"', "") + '"' for w in terms(query))


def full_text_ranking(
    base_id: int, query: str, limit: int, document_ids: Sequence[int] | None = None
) -> list[int]:
    """Chunk ids of base ``base_id`` matching ``query``, best first."""
    if connection.vendor == "sqlite":
        return _fts5_ranking(base_id, query, limit, document_ids)
    params: list[Any] = [query, base_id, str(DocumentStatus.READY)]
    documents = ""
    if document_ids is not None:
        documents = "AND d.id = ANY(%s)"
        params.append(list(document_ids))
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(_RANKED.format(documents=documents), params)
        return [row[0] for row in cursor.fetchall()]


def _fts5_ranking(
    base_id: int, query: str, limit: int, document_ids: Sequence[int] | None
) -> list[int]:
    match = fts5_query(query)
    if not match:
        return []
    params: list[Any] = [match, base_id, str(DocumentStatus.READY)]
    documents = ""
    if document_ids is not None:
        ids = [int(i) for i in document_ids]
        documents = f"AND d.id IN ({','.join('%s' for _ in ids) or 'NULL'})"
        params += ids
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(_FTS_RANKED.format(documents=documents), params)
        return [row[0] for row in cursor.fetchall()]
