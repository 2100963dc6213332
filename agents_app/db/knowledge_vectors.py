"""The vector side of a knowledge base's search on PostgreSQL with pgvector (docs/knowledge.md,
"Which vector index a deployment uses").

``agents_app_knowledgevector`` is a side table, one row per chunk: its base, its dimension and
its embedding as an untyped ``vector`` (a base's dimension follows its embedding model, so one
table holds several). Per dimension, a partial HNSW index over ``embedding::vector(n)`` with
cosine distance serves ``ORDER BY embedding::vector(n) <=> query``; pgvector indexes at most
2,000 dimensions, so a larger model is searched exactly (the same ``<=>``, no index).
Triggers on the chunk table delete a chunk's vector row with it (``_CREATE``). Not a model: SQLite and PostgreSQL servers without pgvector
have no such type, and keep the exact numpy search (``services/knowledge/search.py``).

``install`` creates the extension (where the server offers it and the role may) and the
table, and copies the stored embeddings in; migration ``0036`` runs it, and so does
``manage.py knowledge_indexes --install`` after pgvector is added to a server later.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from agents_app.models.knowledge import DocumentStatus

if TYPE_CHECKING:
    import numpy as np

TABLE = "agents_app_knowledgevector"
MAX_INDEXED_DIMENSION = 2000  # pgvector's HNSW limit for ``vector``
EF_SEARCH = 100  # candidates HNSW keeps while searching: above the 50 the fusion asks for

# No foreign key: one to the chunk table would stop Django's ``flush`` (a ``TRUNCATE`` of
# every model's table but this one). Two statement triggers keep the rows instead: a DELETE
# of chunks (of a document, of a base, of a re-embedding) deletes their vector rows in the
# same statement, and a TRUNCATE of chunks truncates the vectors.
_CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    chunk_id bigint PRIMARY KEY,
    base_id bigint NOT NULL,
    dimension smallint NOT NULL,
    embedding vector NOT NULL
);
CREATE INDEX IF NOT EXISTS knowledge_vector_base ON {TABLE} (base_id, dimension);
CREATE OR REPLACE FUNCTION knowledge_vector_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {TABLE} v USING gone WHERE v.chunk_id = gone.id;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION knowledge_vector_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE {TABLE};
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS knowledge_vector_delete ON agents_app_knowledgechunk;
CREATE TRIGGER knowledge_vector_delete AFTER DELETE ON agents_app_knowledgechunk
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION knowledge_vector_forget();
DROP TRIGGER IF EXISTS knowledge_vector_truncate ON agents_app_knowledgechunk;
CREATE TRIGGER knowledge_vector_truncate AFTER TRUNCATE ON agents_app_knowledgechunk
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_vector_truncate();
"""
UNINSTALL = f"""
DROP TRIGGER IF EXISTS knowledge_vector_delete ON agents_app_knowledgechunk;
DROP TRIGGER IF EXISTS knowledge_vector_truncate ON agents_app_knowledgechunk;
DROP FUNCTION IF EXISTS knowledge_vector_forget();
DROP FUNCTION IF EXISTS knowledge_vector_truncate();
DROP TABLE IF EXISTS {TABLE};
"""
_UPSERT = f"""
INSERT INTO {TABLE} (chunk_id, base_id, dimension, embedding) VALUES (%s, %s, %s, %s::vector)
ON CONFLICT (chunk_id) DO UPDATE
SET base_id = EXCLUDED.base_id, dimension = EXCLUDED.dimension, embedding = EXCLUDED.embedding
"""
# The partial index of the dimension serves the ORDER BY; with pgvector >= 0.8 an iterative
# scan keeps reading the graph until LIMIT rows pass the other conditions (base, status,
# filters), instead of returning fewer than asked when other bases' chunks are nearer.
_NEAREST = f"""
SELECT v.chunk_id
FROM {TABLE} v
JOIN agents_app_knowledgechunk c ON c.id = v.chunk_id
JOIN agents_app_knowledgedocument d ON d.id = c.document_id
WHERE v.base_id = %s AND v.dimension = %s AND d.status = %s {{filters}}
ORDER BY v.embedding::vector({{dim}}) <=> %s::vector({{dim}})
LIMIT %s
"""

# (alias, host, port, database name) -> pgvector's version, or None: checked once per
# database a process talks to.
_seen: dict[tuple[str, str, str, str], str | None] = {}
_indexed: set[tuple[tuple[str, str, str, str], int]] = set()


def _key(conn: BaseDatabaseWrapper) -> tuple[str, str, str, str]:
    s = conn.settings_dict
    return (conn.alias, str(s.get("HOST") or ""), str(s.get("PORT") or ""), str(s["NAME"]))


def pgvector_version() -> str | None:
    """pgvector's version when this database searches vectors with it (the extension and the
    table are there), else None. Asked once per database and process."""
    if connection.vendor != "postgresql":
        return None
    key = _key(connection)
    if key not in _seen:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
                "to_regclass(%s) IS NOT NULL",
                [TABLE],
            )
            version, table = cursor.fetchone()
        _seen[key] = version if table else None
    return _seen[key]


def forget() -> None:
    """Ask again (after ``install``)."""
    _seen.clear()
    _indexed.clear()


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _ensure_index(dimension: int, conn: BaseDatabaseWrapper = connection) -> None:
    """The partial HNSW index of ``dimension`` (created the first time a base of that
    dimension is filled; not at all above pgvector's limit)."""
    key = (_key(conn), dimension)
    if dimension > MAX_INDEXED_DIMENSION or key in _indexed:
        return
    with conn.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [f"knowledge_vector_hnsw_{dimension}"])
        if not cursor.fetchone()[0]:
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS knowledge_vector_hnsw_{dimension} ON {TABLE} "
                f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
                f"WHERE dimension = {dimension}"
            )
    # Remembered once committed: a rolled-back transaction takes its index with it.
    transaction.on_commit(lambda: _indexed.add(key), using=conn.alias)


def vectors_store(base_id: int, rows: Iterable[tuple[int, np.ndarray]]) -> None:
    """Write the vectors of chunks ``(chunk id, embedding)`` of base ``base_id`` (call inside
    the transaction that writes the chunks)."""
    params = [(pk, base_id, int(v.shape[0]), _literal(v)) for pk, v in rows]
    if not params:
        return
    for dimension in {p[2] for p in params}:
        _ensure_index(dimension)
    with connection.cursor() as cursor:
        cursor.executemany(_UPSERT, params)


def nearest_chunks(
    base_id: int,
    vector: np.ndarray,
    limit: int,
    document_ids: Sequence[int] | None = None,
    pages: tuple[int, int] | None = None,
) -> list[int]:
    """Chunk ids of base ``base_id`` (ready documents only) nearest to ``vector`` by cosine
    distance, best first."""
    dimension = int(vector.shape[0])
    params: list[Any] = [base_id, dimension, str(DocumentStatus.READY)]
    filters = ""
    if document_ids is not None:
        filters += " AND d.id = ANY(%s)"
        params.append(list(document_ids))
    if pages is not None:
        filters += " AND c.page BETWEEN %s AND %s"
        params += [pages[0], pages[1]]
    params += [_literal(vector), limit]
    sql = _NEAREST.format(filters=filters, dim=dimension)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
        if _iterative(pgvector_version()):
            cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def _iterative(version: str | None) -> bool:
    parts = tuple(int(p) for p in (version or "0").split(".")[:2] if p.isdigit())
    return parts >= (0, 8)


def install(conn: BaseDatabaseWrapper) -> bool:
    """Create pgvector's extension and the vector table on ``conn`` where the server offers
    the extension, and copy the chunks' stored embeddings in; whether the table is there.
    Never fails on a server without pgvector, or a role that may not create extensions
    (then an administrator runs ``CREATE EXTENSION vector`` and ``manage.py
    knowledge_indexes --install``)."""
    import numpy as np  # on use: its import is 0.13 s of every process's start

    if conn.vendor != "postgresql":
        return False
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'), "
            "EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')"
        )
        available, installed = cursor.fetchone()
        if not available:
            return False
        if not installed:
            try:
                with transaction.atomic(using=conn.alias):
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except Exception:  # no privilege: the numpy search stays (docs/knowledge.md)
                return False
        cursor.execute(_CREATE)
        cursor.execute(
            f"SELECT c.id, d.base_id, c.embedding FROM agents_app_knowledgechunk c "
            f"JOIN agents_app_knowledgedocument d ON d.id = c.document_id "
            f"WHERE c.dimension > 0 AND c.embedding IS NOT NULL "
            f"AND NOT EXISTS (SELECT 1 FROM {TABLE} v WHERE v.chunk_id = c.id)"
        )
        missing = cursor.fetchall()
        for pk, base_id, data in missing:
            vector = np.frombuffer(bytes(data), dtype=np.float32)
            cursor.execute(_UPSERT, [pk, base_id, int(vector.shape[0]), _literal(vector)])
        cursor.execute(f"SELECT DISTINCT dimension FROM {TABLE}")
        dimensions = [row[0] for row in cursor.fetchall()]
    forget()
    for dimension in dimensions:
        _ensure_index(dimension, conn)
    return True
