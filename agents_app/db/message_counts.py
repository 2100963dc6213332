"""The per-thread count of top-level, non-silent messages, kept by database triggers; and
the conversation tree's link of each new message to the one it follows (issue #41).

The messages page answers with an exact ``total``. Counting it per request costs time in
proportion to the thread (an index-only scan of 10,000 entries is about a millisecond), so
the default page (``depth`` 0, silent messages hidden) reads ``ThreadMessageCount``
instead. Other scopes still count.

Why triggers and not our code: messages are written by the engine's one-statement commit
(``bridge.fast_commit``), by bulk upserts and drains (``bridge.store``), by services, and
deleted by services, by Django's cascades and by retention's batched raw deletes. A
trigger sees all of them, and runs in the writer's transaction, so the count commits or
rolls back with the rows it counts.

The triggers are installed after every ``migrate`` (``post_migrate``), not by a
migration, because SQLite drops a table's triggers whenever Django rebuilds the table to
alter it; installing is a no-op when they are all present. When any was missing, the
counts are recomputed in the same transaction as the install (on PostgreSQL the
``CREATE TRIGGER`` lock keeps writers out until it commits). A changed trigger body needs
new names (the ``_v2`` suffix), so the next ``migrate`` installs it (and drops the old).

The counts are kept per thread in two columns: messages on the active path
(``top_level``, the page's ``total``) and on abandoned branches (``abandoned``). The
``follows`` trigger links each new top-level message the writer left unlinked to the
thread's newest top-level message on the active path, so every writer (the engine above
all) appends to the active path without knowing the tree exists.

PostgreSQL counts inserts and deletes once per statement (transition tables: one
upsert per thread, however many rows a drain or a retention batch touches); an update
only when it moves a message in or out of the count (a row trigger with a ``WHEN``, so
the engine's upserts of existing rows cost nothing). SQLite has only row triggers.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from agents_app.models import Message, ThreadMessageCount

_MESSAGES = Message._meta.db_table
_COUNTS = ThreadMessageCount._meta.db_table
_PREFIX = "agents_app_msgcount_"
# v2: counts the active path and abandoned branches apart, and sets ``follows`` (issue #41).
TRIGGERS = tuple(f"{_PREFIX}{what}_v2" for what in ("insert", "delete", "update", "follows"))
_INSERT, _DELETE, _UPDATE, _FOLLOWS = TRIGGERS
# Replaced ones, dropped when the current ones are installed.
_OLD = tuple(f"{_PREFIX}{what}_v1" for what in ("insert", "delete", "update"))

# The newest top-level message on the active path before NEW: what a new message follows.
_NEWEST_ON_PATH = (
    f"SELECT id FROM {_MESSAGES} WHERE thread_id = NEW.thread_id AND depth = 0 "
    "AND NOT abandoned AND created_at < NEW.created_at ORDER BY created_at DESC LIMIT 1"
)

_POSTGRES = [
    *(f"DROP TRIGGER IF EXISTS {old} ON {_MESSAGES}" for old in _OLD),
    *(f"DROP FUNCTION IF EXISTS {old}()" for old in _OLD),
    f"""CREATE OR REPLACE FUNCTION {_INSERT}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {_COUNTS} AS c (thread_id, top_level, abandoned)
    SELECT thread_id, count(*) FILTER (WHERE NOT abandoned), count(*) FILTER (WHERE abandoned)
    FROM new_rows WHERE depth = 0 AND NOT silent
    GROUP BY thread_id ORDER BY thread_id
    ON CONFLICT (thread_id) DO UPDATE SET top_level = c.top_level + EXCLUDED.top_level,
        abandoned = c.abandoned + EXCLUDED.abandoned;
    RETURN NULL;
END $$""",
    # Only existing rows are lowered: Django may delete a thread's count row before its
    # messages, and a new row then would point at a thread about to go.
    f"""CREATE OR REPLACE FUNCTION {_DELETE}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Thread order, so two deletes spanning the same threads cannot deadlock.
    PERFORM 1 FROM {_COUNTS} WHERE thread_id IN (SELECT thread_id FROM old_rows)
    ORDER BY thread_id FOR UPDATE;
    UPDATE {_COUNTS} c SET top_level = c.top_level - d.n, abandoned = c.abandoned - d.a
    FROM (SELECT thread_id, count(*) FILTER (WHERE NOT abandoned) AS n,
                 count(*) FILTER (WHERE abandoned) AS a
          FROM old_rows WHERE depth = 0 AND NOT silent GROUP BY thread_id) d
    WHERE c.thread_id = d.thread_id;
    RETURN NULL;
END $$""",
    f"""CREATE OR REPLACE FUNCTION {_UPDATE}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.depth = 0 AND NOT OLD.silent THEN
        UPDATE {_COUNTS} SET top_level = top_level - (CASE WHEN OLD.abandoned THEN 0 ELSE 1 END),
            abandoned = abandoned - (CASE WHEN OLD.abandoned THEN 1 ELSE 0 END)
        WHERE thread_id = OLD.thread_id;
    END IF;
    IF NEW.depth = 0 AND NOT NEW.silent THEN
        INSERT INTO {_COUNTS} AS c (thread_id, top_level, abandoned)
        VALUES (NEW.thread_id, CASE WHEN NEW.abandoned THEN 0 ELSE 1 END,
                CASE WHEN NEW.abandoned THEN 1 ELSE 0 END)
        ON CONFLICT (thread_id) DO UPDATE SET top_level = c.top_level + EXCLUDED.top_level,
            abandoned = c.abandoned + EXCLUDED.abandoned;
    END IF;
    RETURN NULL;
END $$""",
    # A row trigger BEFORE the insert: later rows of the same statement see earlier ones, so
    # a commit of several messages chains them. Only rows whose writer left it empty.
    f"""CREATE OR REPLACE FUNCTION {_FOLLOWS}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.follows := ({_NEWEST_ON_PATH});
    RETURN NEW;
END $$""",
    f"DROP TRIGGER IF EXISTS {_INSERT} ON {_MESSAGES}",
    f"DROP TRIGGER IF EXISTS {_DELETE} ON {_MESSAGES}",
    f"DROP TRIGGER IF EXISTS {_UPDATE} ON {_MESSAGES}",
    f"DROP TRIGGER IF EXISTS {_FOLLOWS} ON {_MESSAGES}",
    f"CREATE TRIGGER {_INSERT} AFTER INSERT ON {_MESSAGES} REFERENCING NEW TABLE AS new_rows "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {_INSERT}()",
    f"CREATE TRIGGER {_DELETE} AFTER DELETE ON {_MESSAGES} REFERENCING OLD TABLE AS old_rows "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {_DELETE}()",
    f"CREATE TRIGGER {_UPDATE} AFTER UPDATE OF thread_id, depth, silent, abandoned ON {_MESSAGES} "
    "FOR EACH ROW WHEN (OLD.thread_id IS DISTINCT FROM NEW.thread_id "
    "OR (OLD.depth = 0 AND NOT OLD.silent) IS DISTINCT FROM (NEW.depth = 0 AND NOT NEW.silent) "
    "OR (OLD.depth = 0 AND NOT OLD.silent AND OLD.abandoned IS DISTINCT FROM NEW.abandoned)) "
    f"EXECUTE FUNCTION {_UPDATE}()",
    f"CREATE TRIGGER {_FOLLOWS} BEFORE INSERT ON {_MESSAGES} "
    f"FOR EACH ROW WHEN (NEW.depth = 0 AND NEW.follows IS NULL) EXECUTE FUNCTION {_FOLLOWS}()",
]

_SQLITE_COUNTED = "{row}.depth = 0 AND {row}.silent = 0"
_SQLITE_ACTIVE = "CASE WHEN {row}.abandoned THEN 0 ELSE 1 END"
_SQLITE_ABANDONED = "CASE WHEN {row}.abandoned THEN 1 ELSE 0 END"
_SQLITE = [
    *(f"DROP TRIGGER IF EXISTS {old}" for old in _OLD),
    f"DROP TRIGGER IF EXISTS {_INSERT}",
    f"DROP TRIGGER IF EXISTS {_DELETE}",
    f"DROP TRIGGER IF EXISTS {_UPDATE}",
    f"DROP TRIGGER IF EXISTS {_FOLLOWS}",
    f"""CREATE TRIGGER {_INSERT} AFTER INSERT ON {_MESSAGES}
WHEN {_SQLITE_COUNTED.format(row="NEW")}
BEGIN
    INSERT INTO {_COUNTS} (thread_id, top_level, abandoned)
    VALUES (NEW.thread_id, {_SQLITE_ACTIVE.format(row="NEW")},
            {_SQLITE_ABANDONED.format(row="NEW")})
    ON CONFLICT (thread_id) DO UPDATE SET top_level = top_level + excluded.top_level,
        abandoned = abandoned + excluded.abandoned;
END""",
    f"""CREATE TRIGGER {_DELETE} AFTER DELETE ON {_MESSAGES}
WHEN {_SQLITE_COUNTED.format(row="OLD")}
BEGIN
    UPDATE {_COUNTS} SET top_level = top_level - {_SQLITE_ACTIVE.format(row="OLD")},
        abandoned = abandoned - {_SQLITE_ABANDONED.format(row="OLD")}
    WHERE thread_id = OLD.thread_id;
END""",
    f"""CREATE TRIGGER {_UPDATE} AFTER UPDATE OF thread_id, depth, silent, abandoned
ON {_MESSAGES}
BEGIN
    UPDATE {_COUNTS} SET top_level = top_level - {_SQLITE_ACTIVE.format(row="OLD")},
        abandoned = abandoned - {_SQLITE_ABANDONED.format(row="OLD")}
    WHERE thread_id = OLD.thread_id AND {_SQLITE_COUNTED.format(row="OLD")};
    INSERT INTO {_COUNTS} (thread_id, top_level, abandoned)
    SELECT NEW.thread_id, {_SQLITE_ACTIVE.format(row="NEW")},
        {_SQLITE_ABANDONED.format(row="NEW")}
    WHERE {_SQLITE_COUNTED.format(row="NEW")}
    ON CONFLICT (thread_id) DO UPDATE SET top_level = top_level + excluded.top_level,
        abandoned = abandoned + excluded.abandoned;
END""",
    # SQLite cannot change NEW in a BEFORE trigger: the row is updated right after insert.
    f"""CREATE TRIGGER {_FOLLOWS} AFTER INSERT ON {_MESSAGES}
WHEN NEW.depth = 0 AND NEW.follows IS NULL
BEGIN
    UPDATE {_MESSAGES} SET follows = ({_NEWEST_ON_PATH}) WHERE id = NEW.id;
END""",
]

_COUNTED = "depth = 0 AND silent = %s"
_RECOUNT = [
    f"DELETE FROM {_COUNTS}",
    f"INSERT INTO {_COUNTS} (thread_id, top_level, abandoned) SELECT thread_id, "
    "SUM(CASE WHEN abandoned THEN 0 ELSE 1 END), SUM(CASE WHEN abandoned THEN 1 ELSE 0 END) "
    f"FROM {_MESSAGES} WHERE {_COUNTED} GROUP BY thread_id",
]

_PRESENT = {
    "postgresql": "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
}

# Every thread whose kept counts differ from a fresh count, in one statement (one
# snapshot, so a writer committing meanwhile cannot make a false difference). ``counted``
# and ``kept`` are the active path's; a wrong abandoned count shows as a row too.
_FRESH = (
    "SELECT thread_id, SUM(CASE WHEN abandoned THEN 0 ELSE 1 END) AS n, "
    f"SUM(CASE WHEN abandoned THEN 1 ELSE 0 END) AS a FROM {_MESSAGES} WHERE {_COUNTED} "
    "GROUP BY thread_id"
)
_DIFFERENCES = (
    f"SELECT f.thread_id, f.n, c.top_level FROM ({_FRESH}) f "
    f"LEFT JOIN {_COUNTS} c ON c.thread_id = f.thread_id WHERE c.top_level IS NULL "
    "OR c.top_level <> f.n OR c.abandoned <> f.a "
    f"UNION ALL SELECT c.thread_id, 0, c.top_level FROM {_COUNTS} c "
    "WHERE (c.top_level <> 0 OR c.abandoned <> 0) "
    f"AND NOT EXISTS (SELECT 1 FROM {_MESSAGES} m WHERE m.thread_id = c.thread_id "
    "AND m.depth = 0 AND m.silent = %s)"
)


def install(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Install the triggers unless all are present; then recount. True when it installed."""
    connection = connections[using]
    statements = {"postgresql": _POSTGRES, "sqlite": _SQLITE}.get(connection.vendor)
    if statements is None:
        raise ImproperlyConfigured(
            f"The studio runs on PostgreSQL or SQLite; DATABASE_URL names {connection.vendor}"
        )
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if _MESSAGES not in connection.introspection.table_names(cursor):
            return False  # migrated back past the message table
        cursor.execute(_PRESENT[connection.vendor], [_MESSAGES])
        present = {row[0] for row in cursor.fetchall()}
        if present.issuperset(TRIGGERS):
            return False
        for sql in statements:
            cursor.execute(sql)
        cursor.execute(_RECOUNT[0])
        cursor.execute(_RECOUNT[1], [False])
    return True


def install_after_migrate(sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """``post_migrate`` receiver (connected in ``AgentsAppConfig.ready``)."""
    install(using)


def differences(using: str = DEFAULT_DB_ALIAS) -> list[tuple[str, int, int | None]]:
    """``(thread_id, counted, kept)`` for every thread whose kept count is wrong (the
    suite checks this after each test that touched the database)."""
    with connections[using].cursor() as cursor:
        cursor.execute(_DIFFERENCES, [False, False])
        return [(str(uuid.UUID(str(t))), n, kept) for t, n, kept in cursor.fetchall()]
