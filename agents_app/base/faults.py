"""Named points of the session path where tests break the database connection for real.

``STUDIO_FAULT_POINTS`` (tests only; empty in production) lists points as ``name`` or
``name:count``. When a listed point is reached, its connection's server process is
terminated with ``pg_terminate_backend`` from a second connection, so the next statement
fails with the driver's own error ("terminating connection due to administrator
command"), exactly as after a database restart or an administrator's kill. Each point
fires ``count`` times (once by default) per process.

Points: ``claim`` (before the claiming UPDATE), ``announce`` (the registry announcement
that reads the thread: a session's end; its start announces from what the claim read),
``plan``, ``load_progress`` (a claimed session's progress read after its own commit; its start
takes the progress the claim read), ``engine_commit`` (the event loop's own commit
connection), ``stop_cleanup``, ``release`` (in its transaction), ``heartbeat``, and
``effects_sweep`` (the effect sweep's claim, agents_app/orchestration/effect_runner.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable

import psycopg
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

POINTS = frozenset(
    {
        "claim",
        "announce",
        "plan",
        "load_progress",
        "engine_commit",
        "stop_cleanup",
        "release",
        "heartbeat",
        "effects_sweep",
    }
)
logger = logging.getLogger("agents_app.base.faults")
_lock = threading.Lock()
_fired: dict[str, int] = {}
# How to find the event loop's own commit connection (``ahit``). That connection belongs to
# the bridge, which builds on the services this module also serves: the orchestration hands
# the lookup over (``orchestration/engines.py``) so that this leaf imports nothing of ours.
_loop_connection_pid: Callable[[], Awaitable[int]] | None = None


def set_loop_connection_pid(lookup: Callable[[], Awaitable[int]]) -> None:
    """Name the coroutine that returns the server pid of this loop's commit connection."""
    global _loop_connection_pid
    _loop_connection_pid = lookup


def _armed(name: str) -> bool:
    points: dict[str, int] = settings.STUDIO_FAULT_POINTS
    if name not in points:
        return False
    with _lock:
        if _fired.get(name, 0) >= points[name]:
            return False
        _fired[name] = _fired.get(name, 0) + 1
        return True


def _terminate(name: str, pid: int) -> None:
    logger.warning("fault point %s: terminating database backend %s", name, pid)
    params = dict(connection.get_connection_params())
    for django_only in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(django_only, None)
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        # pg_terminate_backend only signals: wait until the backend is really gone.
        for _ in range(200):
            row = admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
            if row is None:
                return
            admin.execute("SELECT pg_sleep(0.01)")


def hit(name: str) -> None:
    """Break this thread's Django connection when ``name`` is armed (sync code)."""
    if not settings.STUDIO_FAULT_POINTS or not _armed(name):
        return
    connection.ensure_connection()
    _terminate(name, connection.connection.info.backend_pid)


async def ahit(name: str) -> None:
    """Break this event loop's commit connection when ``name`` is armed."""
    if not settings.STUDIO_FAULT_POINTS or not _armed(name):
        return
    if _loop_connection_pid is None:
        raise RuntimeError(f"fault point {name}: no commit connection registered")
    pid = await _loop_connection_pid()
    await sync_to_async(_terminate, thread_sensitive=False)(name, pid)
