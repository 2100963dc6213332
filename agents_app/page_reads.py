"""The messages page's reads in plain SQL (issue #21).

The newest-100 page is the request a chat page makes on every open and every reconnect.
Through the ORM, most of its time was Python, not PostgreSQL: compiling three querysets,
then building a Django model for each of 100 rows (with a JSON decode per JSON column)
only to copy its fields into the engine's ``Message``. Here the three statements are
fixed strings, and each row goes straight from the cursor's tuple to the engine's
``Message`` (the same type ``bridge.rows.engine_message`` builds, so ``to_wire`` gives the
same JSON).

Values come back as the driver gives them: PostgreSQL returns UUIDs and booleans, SQLite
hex strings and integers; JSON columns arrive as text on both (Django registers a text
loader for ``jsonb``). ``tests/agents_app/test_page_reads.py`` holds these reads equal
to the ORM's on whichever database the suite runs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import orjson
from django.db import connection

from agents_app.models import Message, QueuedMessage, ThreadMessageCount
from agents_app.raw_sql import db_uuid
from runtime.messages import Message as EngineMessage

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


def _json(value: Any) -> Any:
    if value is None or not isinstance(value, str | bytes):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:  # integers past 64 bits: the standard library reads them
        return json.loads(value)


def _uuid(value: Any) -> str | None:
    if value is None:
        return None
    return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "uuid": _uuid,
    "json": _json,
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


def _where(include_silent: bool) -> str:
    return "thread_id = %s AND depth <= %s" + ("" if include_silent else " AND silent = %s")


def _params(thread_id: Any, depth: int, include_silent: bool) -> list[Any]:
    return [db_uuid(thread_id), depth] + ([] if include_silent else [False])


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
                "id": _uuid(row[0]),
                "role": row[1],
                "content": row[2],
                "silent": bool(row[3]),
                "metadata": _json(row[4]),
                "attachments": _json(row[5]),
                "created_at": row[6],
            }
            for row in cursor.fetchall()
        ]
