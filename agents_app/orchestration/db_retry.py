"""Database connection errors in long-lived async code (the session runner and its loop).

Django reconnects a dead connection only in ``close_old_connections``, which request
handling calls and an event loop that lives for days never does: after a database restart
every ORM call of the loop's database thread would fail for ever. These helpers tell a
connection failure from other errors, drop dead connections, and retry a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import psycopg
from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError, connections

logger = logging.getLogger("agents_app.orchestration.db_retry")

# Failures of the database connection, not of the work: a restarted or overloaded server
# ("too many connections"), a killed backend, a dropped network. A claim that meets one is
# handed back and taken again (the session resumes from its stored progress), never failed.
CONNECTION_ERRORS = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)


async def retrying(attempts: Iterator[float], what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn`` in the database thread, tried again after connection errors (while ``attempts``
    last: one budget per job); ``None`` once they ran out."""
    while True:
        try:
            return await sync_to_async(fn)(*args, **kwargs)
        except CONNECTION_ERRORS as exc:
            delay = next(attempts, None)
            logger.warning("session %s failed (%s)%s", what, exc, "" if delay else "; giving up")
            await sync_to_async(drop_broken_connections)()
            if delay is None:
                return None
            await asyncio.sleep(delay)


def drop_broken_connections() -> None:
    """Close this thread's database connections that died, so the next query reconnects
    (Django reconnects only in ``close_old_connections``, which the loop never calls)."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and not conn.in_atomic_block and not conn.is_usable():
            with contextlib.suppress(Exception):
                conn.close()


def close_failed_connections() -> None:
    """``close_old_connections`` without the age rule: close this thread's connections
    that met an error and no longer answer, keep the healthy ones.

    The session runner called ``close_old_connections`` before every job; with the
    default ``DB_CONN_MAX_AGE`` of 0 that closed the database thread's connection every
    time, so each session opened a new one on the one thread that starts every session
    (a few milliseconds of that thread per start, issue #21). A connection that died
    without an error yet fails its first query, which ``retrying`` catches."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None or conn.in_atomic_block or not conn.errors_occurred:
            continue
        if conn.is_usable():
            conn.errors_occurred = False
        else:
            with contextlib.suppress(Exception):
                conn.close()


class OutageLog:
    """One concise warning per database outage for a loop that retries on its own (a
    periodic task, a sweep): not an ERROR with a traceback on every tick while the server
    is away. Drops the dead connections on each failure so the next tick reconnects."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log, self.what = log, what
        self.failing = False

    def failed(self, exc: BaseException) -> None:
        drop_broken_connections()
        if not self.failing:
            self.failing = True
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self.log.warning(
                "%s: database unavailable (%s: %s); retrying on every tick",
                self.what,
                type(exc).__name__,
                first_line,
            )

    def succeeded(self) -> None:
        if self.failing:
            self.failing = False
            self.log.warning("%s: database reachable again", self.what)
