"""The messages page's reads, and the engine's, in plain SQL (issue #21).

The newest-100 page is the request a chat page makes on every open and every reconnect.
Through the ORM, most of its time was Python, not PostgreSQL: compiling three querysets,
then building a Django model for each of 100 rows (with a JSON decode per JSON column)
only to copy its fields into the engine's ``Message``. Here the three statements are
fixed strings, and each row goes straight from the cursor's tuple to the engine's
``Message`` (the same type ``bridge.rows.engine_message`` builds, so ``to_wire`` gives the
same JSON). The engine's own history reads (``bridge.store._list_messages``, run at every
session start) use the same path.

Values come back as the driver gives them: PostgreSQL returns UUIDs and booleans, SQLite
hex strings and integers; JSON columns arrive as text on both (Django registers a text
loader for ``jsonb``). ``tests/agents_app/db/test_page_reads.py`` holds these reads equal
to the ORM's on whichever database the suite runs.

They read the active path only (``abandoned = false``, issue #41): a client or an engine
that knows nothing of branches sees one linear conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection

from agents_app.db.raw_sql import db_json, db_uuid, prepared_cursor, text_uuid
from agents_app.models import Message, QueuedMessage, ThreadMessageCount
from runtime.core.messages import Message as EngineMessage

_MESSAGES = Message._meta.db_table
_QUEUED = QueuedMessage._meta.db_table
_KEPT = f"SELECT top_level FROM {ThreadMessageCount._meta.db_table} WHERE thread_id = %s"

# (column, kind): kind says how the driver's value becomes the engine's.
_COLUMNS = (
    ("id", "uuid"),
    ("role", ""),
    ("content", ""),
    ("name", ""),
    ("tool_calls", "json"),
    ("tool_call_id", ""),
    ("tool_status", ""),
    ("status", ""),
    ("created_at", ""),
    ("request_sent_at", ""),
    ("response_completed_at", ""),
    ("parent_id", "uuid"),
    ("depth", ""),
    ("silent", "bool"),
    ("metadata", "json"),
    ("side", "blank"),
    ("attachments", "json"),
    ("reasoning_content", ""),
    ("reasoning_details", "json"),
    ("log_id", "uuid"),
    ("prompt_name", "blank"),
    ("subagent_id", "uuid"),
)
_SELECT = ", ".join(column for column, _ in _COLUMNS)


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "uuid": text_uuid,
    "json": db_json,
    "bool": bool,
    "blank": lambda value: value or None,
    "": lambda value: value,
}
_CONVERTERS = tuple((column, _CONVERT[kind]) for column, kind in _COLUMNS)


def _engine_message(row: tuple[Any, ...]) -> EngineMessage:
    values = {
        column: convert(value) for (column, convert), value in zip(_CONVERTERS, row, strict=True)
    }
    values["metadata"] = values["metadata"] or {}
    return EngineMessage(**values)


# Every read here is of the active path (issue #41): rows on abandoned branches are kept
# but only ``services.threads.branches`` reads them.
def _where(include_silent: bool) -> str:
    return "thread_id = %s AND abandoned = %s AND depth <= %s" + (
        "" if include_silent else " AND silent = %s"
    )


def _params(thread_id: Any, depth: int, include_silent: bool) -> list[Any]:
    return [db_uuid(thread_id), False, depth] + ([] if include_silent else [False])


def stored_count(thread_id: Any, *, depth: int, include_silent: bool) -> int:
    """How many stored messages the page counts: the kept count for the default scope
    (``message_counts``), else an index-only scan on PostgreSQL."""
    with connection.cursor() as cursor:
        if depth == 0 and not include_silent:
            cursor.execute(_KEPT, [db_uuid(thread_id)])
            kept = cursor.fetchone()
            if kept is not None:
                return int(kept[0])
            # No row: the thread never had a counted message (or a row was removed by
            # hand); counting is then cheap, and exact either way.
        sql = f"SELECT COUNT(*) FROM {_MESSAGES} WHERE {_where(include_silent)}"
        cursor.execute(sql, _params(thread_id, depth, include_silent))
        return int(cursor.fetchone()[0])


def stored_window(
    thread_id: Any, *, depth: int, include_silent: bool, newest: bool, offset: int, limit: int
) -> list[EngineMessage]:
    """``limit`` stored messages after skipping ``offset`` from the newest (``newest``) or
    the oldest end, in that order."""
    direction = "DESC" if newest else "ASC"
    sql = (
        f"SELECT {_SELECT} FROM {_MESSAGES} WHERE {_where(include_silent)} "
        f"ORDER BY created_at {direction} LIMIT %s OFFSET %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*_params(thread_id, depth, include_silent), limit, offset])
        return [_engine_message(row) for row in cursor.fetchall()]


def _engine_where(
    thread_id: Any, include_silent: bool, max_depth: int | None, parent_id: str | None
) -> tuple[str, list[Any]]:
    where, params = ["thread_id = %s", "abandoned = %s"], [db_uuid(thread_id), False]
    if not include_silent:
        where.append("silent = %s")
        params.append(False)
    if max_depth is not None:
        where.append("depth <= %s")
        params.append(max_depth)
    if parent_id is not None:
        where.append("parent_id = %s")
        params.append(db_uuid(parent_id))
    return " AND ".join(where), params


# The newest ``created_at`` of all a thread's messages (``MessageQuery.with_newest``).
NEWEST_SQL = f"SELECT MAX(created_at) FROM {_MESSAGES} WHERE thread_id = %s"


def engine_messages(
    thread_id: Any,
    *,
    include_silent: bool,
    max_depth: int | None,
    parent_id: str | None,
    newest: bool,
    offset: int,
    limit: int | None,
    with_newest: bool = False,
) -> tuple[list[EngineMessage], int | None]:
    """The engine's ``list_messages`` window (``runtime.store.protocol.MessageQuery``'s filters),
    in the order read, and with ``with_newest`` the newest ``created_at`` of all the
    thread's messages (else ``None``): every session start reads its history through this.

    One statement either way: the window joined to the newest time, so an empty window (a
    new thread's first session) still brings the time, as a row of NULLs beside it (deeper
    rows can be stored before the top-level row they hang under)."""
    where, params = _engine_where(thread_id, include_silent, max_depth, parent_id)
    order = "DESC" if newest else "ASC"
    sql = f"SELECT {_SELECT} FROM {_MESSAGES} WHERE {where} ORDER BY created_at {order}"
    if limit is not None or offset:
        # OFFSET needs a LIMIT on SQLite, where -1 is none; PostgreSQL reads NULL as none.
        no_limit = -1 if connection.vendor == "sqlite" else None
        sql += " LIMIT %s OFFSET %s"
        params += [no_limit if limit is None else limit, offset]
    if with_newest:
        sql = (
            f"SELECT w.*, n.* FROM ({NEWEST_SQL}) n LEFT JOIN ({sql}) w ON 1 = 1 "
            f"ORDER BY w.created_at {order}"
        )
        params = [db_uuid(thread_id), *params]
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not with_newest:
        return [_engine_message(row) for row in rows], None
    newest_at = rows[0][-1]  # the join always gives a row
    if rows[0][0] is None:  # ``id``: the window is empty
        return [], newest_at
    return [_engine_message(row[:-1]) for row in rows], newest_at


def engine_message_count(
    thread_id: Any, *, include_silent: bool, max_depth: int | None, parent_id: str | None
) -> int:
    """How many messages ``engine_messages`` reads without a window."""
    if max_depth == 0 and parent_id is None:
        return stored_count(thread_id, depth=0, include_silent=include_silent)
    where, params = _engine_where(thread_id, include_silent, max_depth, parent_id)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {_MESSAGES} WHERE {where}", params)
        return int(cursor.fetchone()[0])


def queued_rows(thread_id: Any, *, include_silent: bool) -> list[dict[str, Any]]:
    """The thread's queued messages, oldest first, with what ``wire.queued_wire`` reads."""
    where = "thread_id = %s" + ("" if include_silent else " AND silent = %s")
    params = [db_uuid(thread_id)] + ([] if include_silent else [False])
    sql = (
        f"SELECT id, role, content, silent, metadata, attachments, created_at FROM {_QUEUED} "
        f"WHERE {where} ORDER BY created_at"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [
            {
                "id": text_uuid(row[0]),
                "role": row[1],
                "content": row[2],
                "silent": bool(row[3]),
                "metadata": db_json(row[4]),
                "attachments": db_json(row[5]),
                "created_at": row[6],
            }
            for row in cursor.fetchall()
        ]
