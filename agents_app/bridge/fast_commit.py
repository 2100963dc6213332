"""The engine's commit as one SQL statement on PostgreSQL.

``commit`` runs several times per step, so its cost is the engine's cost. The
ORM version (``store._commit``) takes a transaction and four or five round trips;
this one upserts logs, messages and the session row, updates the thread and
reads back the stop flag (plus whether anything is queued) in a single
statement. A single statement is atomic in autocommit mode, so the guarantee is
the same: all of it is stored, or none of it.

Draining the queue stays on the ORM path (it is rare: only when something was
queued while the session ran) and runs as its own transaction right after; a
crash between the two leaves the queued rows queued, which the next commit drains.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model

from agents_app.bridge import rows
from agents_app.models import Log, Message, ThreadSession
from runtime.store import Commit, ThreadUpdate


@lru_cache(maxsize=64)
def _upsert_skeleton(
    model: type[Model], update: tuple[str, ...], alias: str, count: int
) -> tuple[str, tuple[Any, ...]]:
    """The statement text for ``count`` rows, and the fields whose values fill it.

    Built once per shape: quoting names through ``connection.ops`` goes through
    asgiref's context-local proxy on every access, which cost more than the SQL ran.
    """
    fields = tuple(model._meta.concrete_fields)
    by_name = {f.name: f for f in fields}
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    cols = ", ".join(quote(str(f.column)) for f in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sets = ", ".join(
        f"{quote(c)} = EXCLUDED.{quote(c)}" for c in (str(by_name[n].column) for n in update)
    )
    sql = (
        f"{alias} AS (INSERT INTO {table} ({cols}) VALUES {', '.join([row] * count)} "
        f"ON CONFLICT (id) DO UPDATE SET {sets} RETURNING 1)"
    )
    return sql, fields


def _upsert_sql(
    model: type[Model], objs: list[Model], update: list[str], alias: str
) -> tuple[str, list[Any]]:
    sql, fields = _upsert_skeleton(model, tuple(update), alias, len(objs))
    db = connections[DEFAULT_DB_ALIAS]  # one lookup, not one per field
    params: list[Any] = []
    for obj in objs:
        params += [f.get_db_prep_save(getattr(obj, f.attname), db) for f in fields]
    return sql, params


def _thread_update_sql(thread_id: str, update: ThreadUpdate) -> tuple[str, list[Any]] | None:
    sets: list[str] = []
    params: list[Any] = []
    if update.agent_name is not None:
        sets.append("agent_id = (SELECT id FROM agents_app_agent WHERE name = %s)")
        params.append(update.agent_name)
    if update.stopped is not None:
        sets.append("stopped = %s")
        params.append(update.stopped)
    if update.execution_state is not None:
        sets.append("execution_state = %s::jsonb")
        params.append(json.dumps(update.execution_state.dump()))
    if not sets:
        return None
    return (
        f"th AS (UPDATE agents_app_thread SET {', '.join(sets)} WHERE id = %s RETURNING stopped)",
        [
            *params,
            thread_id,
        ],
    )


def commit_in_one_statement(
    thread_id: str, commit: Commit, session: ThreadSession | None
) -> tuple[bool, bool]:
    """Apply ``commit`` minus the drain; return (stopped, something_is_queued)."""
    ctes: list[str] = []
    params: list[Any] = []
    if commit.logs:
        sql, p = _upsert_sql(
            Log, [rows.log_row(thread_id, x) for x in commit.logs], rows.LOG_UPDATE_FIELDS, "lg"
        )
        ctes.append(sql)
        params += p
    if commit.messages:
        objs = [rows.message_row(thread_id, m) for m in commit.messages]
        sql, p = _upsert_sql(Message, objs, rows.MESSAGE_UPDATE_FIELDS, "ms")  # type: ignore[arg-type]
        ctes.append(sql)
        params += p
    if session is not None:
        sql, p = _upsert_sql(
            ThreadSession, [session], ["status", "side", "progress", "stop_reason"], "ss"
        )
        ctes.append(sql)
        params += p
    stopped_expr = "(SELECT stopped FROM agents_app_thread WHERE id = %s)"
    tail_params: list[Any] = [thread_id]
    if commit.thread is not None and (upd := _thread_update_sql(thread_id, commit.thread)):
        ctes.append(upd[0])
        params += upd[1]
        # Statements in one WITH see one snapshot: the updated flag comes from RETURNING.
        stopped_expr = f"COALESCE((SELECT stopped FROM th), {stopped_expr})"
    query = (
        ("WITH " + ", ".join(ctes) + " " if ctes else "")
        + f"SELECT {stopped_expr}, EXISTS (SELECT 1 FROM agents_app_queuedmessage WHERE thread_id = %s)"
    )
    with connection.cursor() as cursor:
        cursor.execute(query, [*params, *tail_params, thread_id])
        found = cursor.fetchone()
    if found is None or found[0] is None:
        raise LookupError(f"Thread not found: {thread_id}")
    return bool(found[0]), bool(found[1])


def supported() -> bool:
    return connection.vendor == "postgresql" and not connection.in_atomic_block
