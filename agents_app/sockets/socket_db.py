"""Database work of WebSocket consumers, on a small pool of its own.

Channels runs a consumer's ``sync_to_async`` calls on the one process-wide sync thread
(consumers, unlike Django's HTTP requests, get no thread of their own), so every socket's
authentication, thread check and redactor load waited in one line: a few hundred
sockets opening at once (a deploy, a network blip) queued for longer than Daphne's
handshake timeout (5 s) and were refused. ``socket_db(fn, *args)`` runs the call on one of
``STUDIO_SOCKET_DB_THREADS`` threads instead, with Django's request rules for
connections (``close_old_connections`` before and after, so ``CONN_MAX_AGE`` decides
whether a thread keeps its connection): at most that many database connections per
process for sockets, however many sockets there are.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        threads = int(getattr(settings, "STUDIO_SOCKET_DB_THREADS", 4))
        _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="socket-db")
    return _pool


def _as_a_request(fn: Callable[..., T], *args: Any) -> T:
    close_old_connections()
    try:
        return fn(*args)
    finally:
        close_old_connections()


async def socket_db(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the sockets' database pool (see the module doc)."""
    call = sync_to_async(_as_a_request, thread_sensitive=False, executor=_executor())
    result: T = await call(fn, *args)
    return result
