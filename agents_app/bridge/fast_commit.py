"""The engine's commit as one prepared SQL statement on PostgreSQL.

``commit`` runs about three times per step, so its cost is the engine's cost.
``store.commit_rows`` is the engine's one commit path: on SQLite it goes through the
ORM (``store._commit_orm``), which takes a transaction and four or five
round trips; this one upserts logs, messages and the session row, updates the
thread and reads back the stop flag (plus whether anything is queued) in a
single statement. A single statement is atomic in autocommit mode, so the
guarantee is the same: all of it is stored, or none of it.

Why it does not go through the ORM or Django's cursor: measured on the 20-step
bench, most of a commit's time was overhead around a statement PostgreSQL runs in
~0.3 ms. Django binds parameters client-side, so psycopg re-scanned the ~4 KB
statement for placeholders and inlined every value on every call, the server parsed
and planned it each time, and model instances were built per row. Here each
table's rows go as one jsonb array parameter expanded by
``jsonb_populate_recordset``: the statement text and its parameter types are the
same whatever the rows, so it is prepared once per connection (a handful of
shapes) and then only executed. It runs on Django's own connection (so inside a
caller's transaction it is part of it) through Django's ``execute_wrappers``.
``tests/agents_app/bridge/test_fast_commit.py`` keeps the column lists equal to the
models' columns, compares every stored column with the ORM commit's, and checks
that the statement is really prepared.

Deployment note: prepared statements need a session-pooling PgBouncer, or
PgBouncer ≥ 1.21 with ``max_prepared_statements`` set, in transaction pooling; behind
an older pooler ``DB_SERVER_PREPARE=false`` runs the same statement unprepared.

Draining the queue stays on the ORM path (it is rare: only when something was
queued while the session ran) and runs as its own transaction right after; a
crash between the two leaves the queued rows queued, which the next commit drains.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection
from django.db.models import Model
from psycopg.types.json import Jsonb

from agents_app.db import rows
from agents_app.models import Log
from agents_app.models import Message as MessageRow
from runtime.core.messages import Message
from runtime.core.progress import SessionProgress
from runtime.store.protocol import Commit, LogRecord, ThreadUpdate, lands_visible_reply


def _columns(model: type[Model]) -> tuple[str, ...]:
    return tuple(str(f.column) for f in model._meta.concrete_fields)


# Every column, in the table's order; ``*_values`` below build rows with exactly these keys
# (``tests/agents_app/bridge/test_fast_commit.py`` checks it, so a new column cannot be left out).
MESSAGE_COLUMNS = _columns(MessageRow)
LOG_COLUMNS = _columns(Log)
# The session row as a commit writes it; the other columns keep their defaults on insert
# (owner and error empty, timestamps unset) and are not touched on update.
SESSION_COLUMNS = (
    "id",
    "thread_id",
    "status",
    "side",
    "root_message_id",
    "progress",
    "stop_reason",
)
SESSION_UPDATE = ("status", "side", "progress", "stop_reason")
_SESSION_DEFAULTS = {"owner": "''", "error": "''", "created_at": "now()"}

# The conversation tree's columns (issue #41): set on insert (``follows`` by the database
# trigger when NULL), then only by ``services.threads.branches``; an engine upsert never moves a row.
TREE_COLUMNS = ("follows", "abandoned")
# Updated on conflict: everything but the key, the owning thread and the tree's columns.
MESSAGE_UPDATE = tuple(c for c in MESSAGE_COLUMNS[2:] if c not in TREE_COLUMNS)
LOG_UPDATE = LOG_COLUMNS[2:]

# A prepare threshold no statement reaches by repetition: only ``prepare=True`` prepares.
EXPLICIT_PREPARE_ONLY = 2**31 - 1

# The cost columns (max_digits 18, 12 decimal places), converted as DecimalField does.
_COST_CONTEXT = Context(prec=18)
_COST = Decimal(1).scaleb(-12)


def _cost(value: float) -> str:
    """A cost as DecimalField stores it (a float at 18 significant digits, 12 places), as text
    so that JSON carries it exactly."""
    exact = _COST_CONTEXT.create_decimal_from_float(float(value))
    return str(exact.quantize(_COST, context=_COST_CONTEXT))


# Rows travel as JSON objects keyed by column. ``None`` becomes SQL NULL in every column
# (jsonb_populate_recordset maps a JSON null to NULL), which is what the ORM stores for a
# nullable JSON field set to ``None``.


def message_values(thread_id: str, m: Message) -> dict[str, Any]:
    """``m`` as a row of ``MESSAGE_COLUMNS`` (the same values ``rows.message_row`` stores)."""
    return {
        "id": m.id,
        "thread_id": thread_id,
        "role": m.role,
        "content": m.content,
        "name": m.name,
        "tool_calls": m.tool_calls,
        "tool_call_id": m.tool_call_id,
        "tool_status": m.tool_status,
        "status": m.status,
        "created_at": m.created_at,
        "request_sent_at": m.request_sent_at,
        "response_completed_at": m.response_completed_at,
        "parent_id": m.parent_id or None,
        "depth": m.depth,
        "silent": m.silent,
        "follows": None,  # the insert trigger sets it (the engine knows no branches)
        "abandoned": False,
        "metadata": m.metadata or {},
        "side": m.side or "",
        "attachments": m.attachments,
        "reasoning_content": m.reasoning_content,
        "reasoning_details": m.reasoning_details,
        "log_id": m.log_id or None,
        "prompt_name": m.prompt_name or "",
        "subagent_id": m.subagent_id or None,
    }


def log_values(thread_id: str, x: LogRecord) -> dict[str, Any]:
    """``x`` as a row of ``LOG_COLUMNS`` (the same values ``rows.log_row`` stores)."""
    return {
        "id": x.id,
        "thread_id": thread_id,
        "message_id": x.message_id or None,
        "kind": x.kind,
        "parent_id": x.parent_id or None,
        "retry_of_id": x.retry_of_id or None,
        "provider": x.provider,
        "model": x.model,
        "model_id": x.model_id,
        "prompt_name": x.prompt_name,
        "attempt": x.attempt,
        "tool_name": x.tool_name,
        "tool_call_id": x.tool_call_id,
        "request_body": x.request_body,
        "response_body": x.response_body,
        "system_prompt": x.system_prompt,
        "status_code": x.status_code,
        "finish_reason": x.finish_reason or "",
        "input_tokens": x.input_tokens,
        "cached_tokens": x.cached_tokens,
        "output_tokens": x.output_tokens,
        "reasoning_tokens": x.reasoning_tokens,
        "total_tokens": x.total_tokens,
        "cost_input": _cost(x.cost_input),
        "cost_cached": _cost(x.cost_cached),
        "cost_output": _cost(x.cost_output),
        "cost_total": _cost(x.cost_total),
        "cost_known": x.cost_known,
        "latency_ms": x.latency_ms,
        "time_to_first_token_ms": x.time_to_first_token_ms,
        "error": x.error or "",
        "error_type": x.error_type,
        "error_origin": x.error_origin,
        "is_complete": x.is_complete,
        "definition_versions": x.definition_versions,
        "created_at": x.created_at,
    }


def session_values(thread_id: str, progress: SessionProgress) -> dict[str, Any]:
    return {
        "id": progress.session_id,
        "thread_id": thread_id,
        "status": rows.session_status(progress),
        "side": progress.side,
        "root_message_id": progress.root_message_id or None,
        "progress": progress.dump(),
        "stop_reason": progress.stop_reason or "",
    }


# A claimed commit writes only while its worker still owns the session: every write of
# the statement is conditioned on this row, locked until the statement ends. The row is
# found by its id alone and the ownership is a column: with ``owner`` and ``status`` in the
# WHERE, the plan a connection prepared while the table was young (never analyzed: every
# index looks like one row) scanned the (status, heartbeat) index through every running
# session instead of the primary key, and kept that plan (issue #21).
_FENCE = (
    "own AS (SELECT owner = %s AND status = 'running' AS ours "
    "FROM agents_app_threadsession WHERE id = %s FOR UPDATE)"
)
_OWNED = "EXISTS (SELECT 1 FROM own WHERE ours)"


@functools.lru_cache(maxsize=32)
def _upsert(
    table: str, columns: tuple[str, ...], update: tuple[str, ...], alias: str, fenced: bool = False
) -> str:
    """``alias AS (INSERT … ON CONFLICT (id) DO UPDATE …)`` reading its rows from one jsonb
    array parameter: the statement is the same whatever the number of rows, and so is the
    type of its parameter, so it stays prepared."""
    defaults = _SESSION_DEFAULTS if table == "agents_app_threadsession" else {}
    names = ", ".join([*columns, *defaults])
    values = ", ".join([*columns, *defaults.values()])
    sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in update)
    where = f" WHERE {_OWNED}" if fenced else ""
    return (
        f"{alias} AS (INSERT INTO {table} ({names}) "
        f"SELECT {values} FROM jsonb_populate_recordset(NULL::{table}, %s){where} "
        f"ON CONFLICT (id) DO UPDATE SET {sets} RETURNING 1)"
    )


def _thread_update(update: ThreadUpdate) -> tuple[list[str], list[Any]]:
    sets: list[str] = []
    params: list[Any] = []
    if update.agent_name is not None:
        sets.append("agent_id = (SELECT id FROM agents_app_agent WHERE name = %s)")
        params.append(update.agent_name)
    if update.stopped is not None:
        sets.append("stopped = %s")
        params.append(update.stopped)
    if update.execution_state is not None:
        sets.append("execution_state = %s")
        params.append(Jsonb(update.execution_state.dump()))
    return sets, params


@dataclass(frozen=True, slots=True)
class ClaimedRow:
    """A commit made under a claimed session row (``agents_app.orchestration.runner.ClaimedStore``).

    The engine's progress goes onto that row (with a fresh heartbeat) instead of a row
    of its own, and queue rows the commit stores as messages are deleted: a posted
    message becomes the session's first message under the same id. With ``owner`` the
    statement fences itself (writes nothing unless that owner still runs the session);
    without it the caller holds the row lock and has checked.
    """

    session_id: str
    owner: str | None = None


class NotOwner(Exception):
    """A fenced commit found that its worker no longer owns the session: nothing was written."""


def _claimed_ctes(
    thread: uuid.UUID, commit: Commit, claimed: ClaimedRow
) -> tuple[list[str], list[Any], list[uuid.UUID]]:
    """The claimed row's update and the queue cleanup; also the ids the cleanup deletes."""
    sets: list[str] = ["heartbeat_at = now()"]
    params: list[Any] = []
    if commit.progress is not None:
        sets += ["progress = %s", "side = %s", "stop_reason = %s"]
        progress = commit.progress
        params = [Jsonb(progress.dump()), progress.side, progress.stop_reason or ""]
    owned = f" AND {_OWNED}" if claimed.owner else ""
    ctes = [f"cs AS (UPDATE agents_app_threadsession SET {', '.join(sets)} WHERE id = %s{owned})"]
    params.append(uuid.UUID(claimed.session_id))
    stored = [uuid.UUID(m.id) for m in commit.messages]
    if stored:
        ctes.append(
            "dq AS (DELETE FROM agents_app_queuedmessage "
            f"WHERE thread_id = %s AND id = ANY(%s){owned})"
        )
        params += [thread, stored]
    return ctes, params, stored


def statement(
    thread_id: str, commit: Commit, claimed: ClaimedRow | None = None
) -> tuple[str, list[Any]]:
    """The one statement that applies ``commit`` (minus the drain), and its parameters."""
    thread = uuid.UUID(thread_id)
    ctes: list[str] = []
    params: list[Any] = []
    fenced = claimed is not None and claimed.owner is not None
    if claimed is not None and fenced:
        ctes.append(_FENCE)
        params += [claimed.owner, uuid.UUID(claimed.session_id)]
    if commit.logs:
        ctes.append(_upsert("agents_app_log", LOG_COLUMNS, LOG_UPDATE, "lg", fenced))
        params.append(Jsonb([log_values(thread_id, x) for x in commit.logs]))
    if commit.messages:
        ctes.append(_upsert("agents_app_message", MESSAGE_COLUMNS, MESSAGE_UPDATE, "ms", fenced))
        params.append(Jsonb([message_values(thread_id, m) for m in commit.messages]))
    consumed: list[uuid.UUID] = []
    if claimed is not None:
        more, more_params, consumed = _claimed_ctes(thread, commit, claimed)
        ctes += more
        params += more_params
    elif commit.progress is not None:
        ctes.append(_upsert("agents_app_threadsession", SESSION_COLUMNS, SESSION_UPDATE, "ss"))
        params.append(Jsonb([session_values(thread_id, commit.progress)]))
    stopped = "(SELECT stopped FROM agents_app_thread WHERE id = %s)"
    sets, set_params = _thread_update(commit.thread) if commit.thread else ([], [])
    if lands_visible_reply(commit.messages):
        # The unread rule (spec 0.2.0): part of this statement, not one of its own.
        sets.append("last_message_at = now()")
    if sets:
        owned = f" AND {_OWNED}" if fenced else ""
        ctes.append(
            f"th AS (UPDATE agents_app_thread SET {', '.join(sets)} "
            f"WHERE id = %s{owned} RETURNING stopped)"
        )
        params += [*set_params, thread]
        # Statements in one WITH see one snapshot: the updated flag comes from RETURNING.
        stopped = f"COALESCE((SELECT stopped FROM th), {stopped})"
    queued = "SELECT 1 FROM agents_app_queuedmessage WHERE thread_id = %s"
    tail: list[Any] = [thread, thread]
    if consumed:
        # One snapshot: the rows deleted above are still visible to this check.
        queued += " AND NOT (id = ANY(%s))"
        tail.append(consumed)
    owner = f", {_OWNED}" if fenced else ""
    query = ("WITH " + ", ".join(ctes) + " " if ctes else "") + (
        f"SELECT {stopped}, EXISTS ({queued}){owner}"
    )
    return query, [*params, *tail]


@functools.lru_cache(maxsize=128)
def raw_sql(query: str) -> bytes:
    """``query`` with PostgreSQL's own ``$1 … $n`` placeholders for psycopg's ``%s``, for a
    raw cursor, which sends it as it is.

    psycopg converts ``%s`` queries on every call, and caches the conversion only for
    statements under 4 KB; a commit with logs and messages is longer, so every commit
    re-scanned it (about 5% of a worker's samples while hundreds of sessions start). The
    few shapes the statement takes are converted once here, and the same bytes object
    goes to psycopg every time (its hash, the prepared statement's key, is kept too)."""
    parts = query.split("%s")
    if any("%" in part for part in parts):
        raise ValueError("only %s placeholders are converted; the statement has another %")
    numbered = [parts[0]]
    for n, part in enumerate(parts[1:], start=1):
        numbered += [f"${n}", part]
    return "".join(numbered).encode()


def server_prepare() -> bool:
    """Whether the commit statement is prepared on the server: off behind a pooler that
    cannot carry protocol-level prepared statements (``DB_SERVER_PREPARE``)."""
    return bool(settings.DB_SERVER_PREPARE)


def _run(query: str, params: list[Any]) -> tuple[Any, ...] | None:
    """Run ``query`` prepared (unless ``DB_SERVER_PREPARE`` is off), on Django's connection,
    through its ``execute_wrappers``."""
    connection.ensure_connection()
    raw = connection.connection
    assert raw is not None
    if raw.prepare_threshold is None:
        # Django opens connections with prepare_threshold=None, which makes psycopg ignore
        # prepare=True too. A threshold no statement reaches by repetition enables explicit
        # preparation only; Django's own (client-side binding) cursors never prepare.
        raw.prepare_threshold = EXPLICIT_PREPARE_ONLY
    found: list[tuple[Any, ...] | None] = []
    prepare = server_prepare()

    def execute(sql: str, values: Any, many: bool, context: dict[str, Any]) -> None:
        with psycopg.RawCursor(raw) as cursor:
            cursor.execute(raw_sql(sql), values, prepare=prepare)
            found.append(cursor.fetchone())

    executor: Callable[..., Any] = execute
    for wrapper in reversed(connection.execute_wrappers):
        executor = functools.partial(wrapper, executor)
    executor(query, params, False, {"connection": connection, "cursor": None})
    return found[0]


def commit_in_one_statement(
    thread_id: str, commit: Commit, claimed: ClaimedRow | None = None
) -> tuple[bool, bool]:
    """Apply ``commit`` minus the drain; return (stopped, something_is_queued)."""
    return outcome(thread_id, _run(*statement(thread_id, commit, claimed)), claimed)


def outcome(
    thread_id: str, found: tuple[Any, ...] | None, claimed: ClaimedRow | None = None
) -> tuple[bool, bool]:
    """(stopped, something_is_queued) from the statement's row; raises when it wrote nothing."""
    if claimed is not None and claimed.owner and (found is None or not found[2]):
        raise NotOwner(claimed.session_id)
    if found is None or found[0] is None:
        raise LookupError(f"Thread not found: {thread_id}")
    return bool(found[0]), bool(found[1])


def supported() -> bool:
    """PostgreSQL only. Inside a transaction the statement is simply part of it."""
    return connection.vendor == "postgresql"
