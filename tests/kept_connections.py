"""Keeping a clean database connection from one transactional test to the next.

After each test that commits for real (``transactional_db``), Django's
``TransactionTestCase._post_teardown`` closes every connection, because "some DB cursors
include SQL statements as part of cursor creation" that a test's rollback could undo. On
PostgreSQL in autocommit nothing of the kind is undone: Django sets the time zone when it
connects, outside any transaction. But a new connection is a new server process, which reads
the catalog afresh for every table it touches. Measured on the engine suite over
``DjangoStore`` (371 transactional tests, one process, this 2-core machine): 54.7 s of CPU in
all (pytest and PostgreSQL) with a new connection for the test and one for asgiref's thread
every test, 39.2 s with both kept; 53 → 39 s of wall-clock.

A connection is kept only when it is as a new one would be: open and usable, autocommit as
configured, outside any transaction and atomic block. Anything else (a test that broke its
connection, left a transaction open, turned autocommit off) is closed as Django would close
it. ``tests/test_kept_connections.py`` fails if Django stops asking
``_should_reload_connections`` after the flush, or if ``settle_all`` keeps a connection the
server killed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.test import TransactionTestCase
from psycopg.pq import TransactionStatus

_DJANGOS_SHOULD_RELOAD = TransactionTestCase._should_reload_connections


def reusable(connection: Any) -> bool:
    """Whether ``connection`` can serve the next test as a new connection would."""
    if connection.vendor != "postgresql" or connection.connection is None:
        return False
    if connection.in_atomic_block or connection.needs_rollback:
        return False
    if connection.get_autocommit() != connection.settings_dict["AUTOCOMMIT"]:
        return False
    if connection.connection.info.transaction_status != TransactionStatus.IDLE:
        return False  # broken (UNKNOWN) or inside a transaction Django does not know of
    if connection.errors_occurred:
        if not connection.is_usable():
            return False
        connection.errors_occurred = False
    return True


def settle_all() -> None:
    """Close this thread's connections that could not serve the next test; keep the rest."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and not reusable(connection):
            connection.close()


def _settle_instead_of_reload(test: TransactionTestCase) -> bool:
    # Django closes every connection when this answers True; settle them here instead.
    settle_all()
    return False


@contextmanager
def kept_between_tests() -> Iterator[None]:
    """While open, a transactional test leaves its clean connections to the next test."""
    TransactionTestCase._should_reload_connections = _settle_instead_of_reload  # type: ignore[method-assign]
    try:
        yield
    finally:
        TransactionTestCase._should_reload_connections = _DJANGOS_SHOULD_RELOAD  # type: ignore[method-assign]
