"""The engine's commit statement on an asyncio psycopg connection, without a thread hop.

``fast_commit`` made a commit one prepared statement; what was left of its cost
around the statement was the trip through ``sync_to_async``: the engine's coroutine
hands the call to asgiref's executor thread, which blocks on the socket, then wakes
the event loop again. Measured on the 20-step bench that was ~0.3 ms of a ~0.9 ms
commit. Here the same statement runs on a psycopg ``AsyncConnection`` owned by the
event loop, so the loop waits on the socket itself.

One connection per event loop (a Celery worker runs all its sessions on one
long-lived loop), autocommit, used by one statement at a time: asgiref's
thread-sensitive executor serialized every ORM call of a loop on one thread
anyway. The connection is opened with the Django database's parameters, on
first use, and reopened after an error. It is not Django's connection, so it
never joins a caller's transaction: ``DjangoStore`` uses it only when built with
``async_commits=True`` (the session runner and the bench), where no caller
holds one.

Kept on purpose (issue #37 asks for one connection unless a bench shows it is worth more
than 10% of a step): ``bench/django_engine_bench.py --sessions 40`` with the store's
commits here against the same statement through Django's connection in asgiref's thread,
three alternating pairs on the 2-core box (load 6-9, 2026-11-28): CPU per step 2.69 /
2.56 / 3.04 ms here against 3.15 / 3.96 / 3.34 ms (21% of a step on average), step p50
12.6 / 8.0 / 14.8 ms against 14.4 / 14.7 / 16.1 ms. It is the statement ``commit_rows``
runs, on another connection; a drain (rare) and every caller in a transaction go through
``commit_rows`` on Django's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import weakref
from typing import Any

import orjson
import psycopg
from django.db import connections
from psycopg.types.json import set_json_dumps

from agents_app.bridge import fast_commit
from runtime.store.protocol import Commit

# How these connections show in ``pg_stat_activity`` (one per event loop that ran a session).
APPLICATION_NAME = "studio-engine-commits"
# Seconds idle after which the connection is checked before a commit (like Django's
# CONN_HEALTH_CHECKS): during a session it is never idle that long, so this costs nothing there.
HEALTH_CHECK_AFTER = 10.0


def _dumps(value: Any) -> bytes | str:
    """JSON for the statement's jsonb parameters: orjson, ~10x faster than the standard
    library on a commit's rows (their request bodies grow with the conversation; measured
    0.11 ms per commit with ``json.dumps``). PostgreSQL stores the same jsonb either way.
    What orjson refuses (integers past 64 bits, lone surrogates) falls back to ``json``."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value)


class _LoopConnection:
    """The connection of one event loop, and the lock that keeps it to one statement."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.connection: psycopg.AsyncConnection[Any] | None = None
        self.used_at = 0.0

    async def open(self) -> psycopg.AsyncConnection[Any]:
        """The connection, checked first when it sat idle (a server restart or an idle timeout
        would otherwise fail the first commit after a quiet night, and with it a session)."""
        now = time.monotonic()
        if self.connection is not None and now - self.used_at > HEALTH_CHECK_AFTER:
            try:
                await self.connection.execute("SELECT 1")
            except psycopg.Error:
                await self.close()
        self.used_at = now
        if self.connection is None or self.connection.closed:
            self.connection = await psycopg.AsyncConnection.connect(
                **_params(),
                autocommit=True,
                prepare_threshold=fast_commit.EXPLICIT_PREPARE_ONLY,
                application_name=APPLICATION_NAME,
            )
            set_json_dumps(_dumps, self.connection)
        return self.connection

    async def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None and not connection.closed:
            with contextlib.suppress(psycopg.Error):
                await connection.close()


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopConnection] = (
    weakref.WeakKeyDictionary()
)


def _params() -> dict[str, Any]:
    """Django's connection parameters for psycopg, minus what only Django's cursors use."""
    params = dict(connections["default"].get_connection_params())
    for django_only in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(django_only, None)
    return params


def _holder() -> _LoopConnection:
    loop = asyncio.get_running_loop()
    holder = _BY_LOOP.get(loop)
    if holder is None:
        holder = _BY_LOOP[loop] = _LoopConnection()
    return holder


async def run(query: str, params: list[Any]) -> tuple[Any, ...] | None:
    """Run ``query`` prepared (unless ``DB_SERVER_PREPARE`` is off) on this loop's
    connection; its first row."""
    holder = _holder()
    async with holder.lock:
        connection = await holder.open()
        try:
            async with psycopg.AsyncRawCursor(connection) as cursor:
                sql = fast_commit.raw_sql(query)
                await cursor.execute(sql, params, prepare=fast_commit.server_prepare())
                return await cursor.fetchone()
        except psycopg.OperationalError:
            # The connection may be unusable (server restart, network): the next call
            # opens a new one. The statement itself was atomic: all of it or none.
            await holder.close()
            raise


async def commit_in_one_statement(
    thread_id: str, commit: Commit, claimed: fast_commit.ClaimedRow | None = None
) -> tuple[bool, bool]:
    """``fast_commit.commit_in_one_statement`` on this loop's connection."""
    found = await run(*fast_commit.statement(thread_id, commit, claimed))
    return fast_commit.outcome(thread_id, found, claimed)


async def backend_pid() -> int:
    """The server process id of this loop's connection (opened if needed); fault tests."""
    holder = _holder()
    async with holder.lock:
        return (await holder.open()).info.backend_pid


async def close() -> None:
    """Close the running loop's connection (end of a test, worker shutdown)."""
    holder = _BY_LOOP.pop(asyncio.get_running_loop(), None)
    if holder is not None:
        async with holder.lock:
            await holder.close()
