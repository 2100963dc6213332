"""One user-scope execution at a time per person (spec 0.2.0 §2.1), and no call that waits
for itself (§2.2.3).

``user_scope(user_id, thread_id)`` holds the person's lock for the length of a user
endpoint or a user hook. On PostgreSQL the lock is a session advisory lock
(``pg_advisory_lock(NAMESPACE, user_id)``) taken on a connection of its own, opened for
the call and closed after it: every process of the deployment (web, workers) waits for the
same lock, and a process that dies releases it with its connection. The wait is bounded
(``lock_timeout``): a scope held longer than ``WAIT_SECONDS`` answers 503 rather than
queueing callers for ever. Other databases (SQLite, one process) use a lock per person in
this process.

What this execution chain holds is kept in a context variable (it follows ``await``, and
asgiref's hops between sync and async code): a user endpoint that reaches back into the
thread waiting for it, or into its own person's scope again, would wait for itself, and is
refused at once with ``ReentrantUserCall``. A user hook fired by a write inside a scope the
chain holds runs in that scope, without taking the lock again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from django.db import connections

from agents_app.base.errors import DomainError
from runtime.core.user_scope import ReentrantUserCall

# pg_advisory_lock's first key: the user scope's own namespace (no other advisory lock
# here uses it), the user's id is the second.
NAMESPACE = 0x55534552  # "USER"
WAIT_SECONDS = 30


class UserScopeBusy(DomainError):
    """The person's scope stayed busy past ``WAIT_SECONDS``."""

    status = 503


@dataclass
class Held:
    """What one execution chain holds: a person's scope, entered from a thread or not
    (``active`` until the scope is left: a task that inherited the chain outlives it)."""

    user_id: str
    thread_id: str | None
    active: bool = True


_chain: contextvars.ContextVar[tuple[Held, ...]] = contextvars.ContextVar(
    "user_scope_chain", default=()
)


def _live() -> list[Held]:
    return [h for h in _chain.get() if h.active]


def held(user_id: str) -> bool:
    """Whether this execution chain is inside ``user_id``'s scope already."""
    return any(h.user_id == str(user_id) for h in _live())


def check_thread_call(thread_id: str) -> None:
    """Refuse to call into a thread that is waiting for this chain's user endpoint."""
    if any(h.thread_id == str(thread_id) for h in _live()):
        raise ReentrantUserCall(
            f"Thread {thread_id} is waiting for this user endpoint (thread → user → thread): "
            "calling back into it would wait for itself. Answer the thread instead, or post "
            "to it after the call returns."
        )


@contextlib.asynccontextmanager
async def user_scope(user_id: str, thread_id: str | None = None) -> AsyncIterator[None]:
    """Hold ``user_id``'s scope (waiting for another holder); ``ReentrantUserCall`` when this
    chain holds it already."""
    user_id = str(user_id)
    if held(user_id):
        raise ReentrantUserCall(
            f"User {user_id}'s scope is already running in this call (a user endpoint called "
            "back into its own user's scope): it would wait for itself."
        )
    async with _locked(user_id):
        holder = Held(user_id, thread_id)
        token = _chain.set((*_chain.get(), holder))
        try:
            yield
        finally:
            holder.active = False
            _chain.reset(token)


@contextlib.contextmanager
def detached() -> Iterator[None]:
    """Code that starts work of its own (a post, whose session a worker or this process's
    executor runs later) outside this chain: the work would otherwise inherit the chain
    through the context and take itself for a call back into this scope."""
    token = _chain.set(())
    try:
        yield
    finally:
        _chain.reset(token)


@contextlib.asynccontextmanager
async def inside_or_enter(user_id: str) -> AsyncIterator[None]:
    """The person's scope for a user hook: the one this chain holds, or a fresh hold."""
    if held(user_id):
        yield
        return
    async with user_scope(user_id):
        yield


def _postgres() -> bool:
    return connections["default"].vendor == "postgresql"


@contextlib.asynccontextmanager
async def _locked(user_id: str) -> AsyncIterator[None]:
    if not _postgres():
        async with _process_lock(user_id):
            yield
        return
    key = _key(user_id)
    async with await psycopg.AsyncConnection.connect(**_params(), autocommit=True) as conn:
        await conn.execute(f"SET lock_timeout = '{WAIT_SECONDS}s'")
        try:
            await conn.execute("SELECT pg_advisory_lock(%s, %s)", [NAMESPACE, key])
        except psycopg.errors.LockNotAvailable:
            raise UserScopeBusy(
                f"User {user_id}'s scope stayed busy for {WAIT_SECONDS} seconds; try again."
            ) from None
        # Closing the connection releases the lock, also when the call failed.
        yield


def _key(user_id: str) -> int:
    """pg_advisory_lock's second key (a 32-bit integer): the id itself when it fits, else a
    hash of it (another user model's ids; two people sharing a key only wait for each other)."""
    if user_id.isdigit() and int(user_id) < 2**31:
        return int(user_id)
    return zlib.crc32(user_id.encode()) - 2**31


def _params() -> dict[str, Any]:
    params = dict(connections["default"].get_connection_params())
    for django_only in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(django_only, None)
    params["application_name"] = "user-scope lock"
    return params


_process_locks: dict[str, threading.Lock] = {}
_process_guard = threading.Lock()


@contextlib.asynccontextmanager
async def _process_lock(user_id: str) -> AsyncIterator[None]:
    with _process_guard:
        lock = _process_locks.setdefault(user_id, threading.Lock())
    if not await asyncio.to_thread(lock.acquire, True, WAIT_SECONDS):
        raise UserScopeBusy(f"User {user_id}'s scope stayed busy for {WAIT_SECONDS} seconds.")
    try:
        yield
    finally:
        lock.release()
