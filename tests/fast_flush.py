"""Emptying the test database between transactional tests with ``DELETE``, not ``TRUNCATE``.

After each test that commits for real (``transactional_db``: the engine suite over
``DjangoStore``, live servers, anything that reaches the database from another thread),
Django's ``flush`` empties every table with one ``TRUNCATE`` of all of them. On PostgreSQL a
``TRUNCATE`` gives each table and index new files, which the commit then writes out: measured
on this 2-core machine, 1.1 to 1.4 s for our 51 tables, against 6 to 19 ms for a ``DELETE``
of each (the tables hold a test's few rows). That was over a second of every transactional
test, a few hundred of them.

``DELETE`` in any order works in one transaction because Django makes every foreign key
``DEFERRABLE INITIALLY DEFERRED``: they are checked at the commit, when nothing is left. The
audit log refuses deletes unless the transaction sets ``studio.audit_purge``
(migration 0022), so the flush sets it. ``reset_sequences`` (``django_db_reset_sequences``)
keeps Django's ``TRUNCATE … RESTART IDENTITY``.

Content types and permissions are kept: migrations made them, no test makes or removes one,
and Django's ``post_migrate`` after each flush re-created all 55 and 223 of them (half the
flush's cost, about 0.08 s a test, for some 900 tests). With them kept it only read them, and
put back our triggers, which a ``DELETE`` never drops: so on PostgreSQL the flush sends no
``post_migrate`` at all (as Django's own flush does with ``inhibit_post_migrate``), and all the
``DELETE``s go as one string, one round trip. Measured with 30 flushes in a row as
``TransactionTestCase`` calls it, on the quiet machine: 18.3 ms of CPU a flush (27.8 ms of
wall-clock) before, 1.8 to 7.3 ms (5.1 to 11.9 ms) in three runs after.

``tests/test_fast_flush.py`` fails if Django stops calling ``sql_flush`` with these
arguments, the statements stop emptying a table, or a flush as ``TransactionTestCase`` calls it
runs ``post_migrate`` again (Django renaming ``inhibit_post_migrate``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.core.management.commands import flush
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.postgresql.operations import DatabaseOperations

_DJANGOS_SQL_FLUSH = DatabaseOperations.sql_flush
_DJANGOS_FLUSH_HANDLE = flush.Command.handle
# What migrations put there and no test changes (``post_migrate`` would write them back).
KEPT = frozenset({"django_content_type", "auth_permission"})


def sql_flush(
    ops: DatabaseOperations,
    style: Any,
    tables: Sequence[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    if reset_sequences or not tables:
        return _DJANGOS_SQL_FLUSH(
            ops, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    deletes = [f"DELETE FROM {ops.quote_name(table)};" for table in tables if table not in KEPT]
    # One statement string, so one round trip (psycopg sends a parameterless string of several
    # statements whole), not one per table.
    return [" ".join(["SET LOCAL studio.audit_purge = 'on';", *deletes])]


def _handle(command: flush.Command, **options: Any) -> None:
    database = options.get("database") or DEFAULT_DB_ALIAS
    if connections[database].vendor == "postgresql" and not options.get("reset_sequences"):
        # Nothing for post_migrate to put back: the DELETEs keep content types, permissions
        # and our tables' triggers (agents_app/apps.py's receivers re-install those).
        options["inhibit_post_migrate"] = True
    _DJANGOS_FLUSH_HANDLE(command, **options)


@contextmanager
def deletes_instead_of_truncate() -> Iterator[None]:
    """While open, ``flush`` on PostgreSQL empties tables with ``DELETE`` and sends no
    ``post_migrate``."""
    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign]
    flush.Command.handle = _handle  # type: ignore[assignment]
    try:
        yield
    finally:
        DatabaseOperations.sql_flush = _DJANGOS_SQL_FLUSH  # type: ignore[method-assign]
        flush.Command.handle = _DJANGOS_FLUSH_HANDLE  # type: ignore[method-assign]
