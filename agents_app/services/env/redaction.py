"""Secrets known for a thread → a ``Redactor``, for the layers outside the engine.

The engine redacts what it stores and emits (``runtime.core.redaction``). Anything
else that shows thread data (API responses, WebSocket frames sent by the API
or consumers, admin pages) can pass it through here as a second line of
defence:

- ``redact_for_thread(thread_id, data)``: a redacted copy of a JSON-like value;
- ``thread_redactor(thread_id)``: the redactor itself, to reuse for many values;
- ``user_redactor(user_id)``: the redactor of a person's user event stream (their own
  secrets, the instance's, every agent's and prompt's: what their threads resolve but a
  thread's own);
- ``RedactingSink(sink)``: wraps an ``EventSink`` so every frame is redacted with
  the redactor of the frame's thread (loaded once per thread, refreshed after
  ``REFRESH_SECONDS``).

All secret-typed values the thread can resolve count (thread, agent, prompt,
user, instance; shadowed ones too). Values under 4 characters are ignored.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection

from agents_app.base.encryption import decrypt
from agents_app.db.raw_sql import db_uuid, prepared_cursor
from agents_app.models import EnvValue, Thread
from runtime.core.redaction import Redactor
from runtime.store.events import EventSink, Frame

REFRESH_SECONDS = 30.0
OWNED_SCOPES = ("thread", "user")


def secret_values_for_thread(thread_id: str) -> list[tuple[str, str]]:
    """Every ``(name, value)`` secret the thread can resolve (sync; for redaction).

    Only the thread's and its owner's own values keep their name; instance, agent and
    prompt values come with an empty name, so their marker does not tell a user who
    echoes a guess which operator secret it matched (``runtime.core.redaction``). Raises
    ``LookupError`` for an unknown (or malformed) thread id.
    """
    try:
        found, secrets = _thread_and_secrets(thread_id)
    except (ValueError, ValidationError):
        raise LookupError(f"Thread not found: {thread_id}") from None
    if not found:
        raise LookupError(f"Thread not found: {thread_id}")
    return secrets


_ENV = EnvValue._meta.db_table
_THREADS = Thread._meta.db_table
# Definition-level values of every agent and prompt count: a handoff or a sub-prompt can
# reach them, and over-redacting is harmless. A fixed statement, not a queryset: every
# page, post and socket of a thread runs it, and compiling the ORM's version of these
# four alternatives and the owner subquery cost more than PostgreSQL's work (issue #21).
_SECRETS_SQL = (
    f"SELECT scope, key, ciphertext FROM {_ENV} WHERE "
    "(scope = 'thread' AND thread_id = %s AND value_type = %s) "
    "OR scope IN ('agent', 'prompt') "
    "OR (scope = 'instance' AND value_type = %s) "
    f"OR (scope = 'user' AND value_type = %s AND user_id IN "
    f"(SELECT owner_id FROM {_THREADS} WHERE id = %s))"
)


# The same, with one marker row (scope '') when the thread exists: a session start needs
# both answers, in one round trip on its worker's one database thread.
_THREAD_AND_SECRETS_SQL = (
    f"SELECT '', '', '' FROM {_THREADS} WHERE id = %s UNION ALL {_SECRETS_SQL}"
)


def _secret_rows(thread_id: str) -> list[tuple[str, str]]:
    """The secrets of ``secret_values_for_thread`` in one query (the owner's through a
    subquery); an unknown thread gets only the instance and definition-level ones."""
    return _read(_SECRETS_SQL, thread_id, marker=False)[1]


def _thread_and_secrets(thread_id: str) -> tuple[bool, list[tuple[str, str]]]:
    return _read(_THREAD_AND_SECRETS_SQL, thread_id, marker=True)


def _read(sql: str, thread_id: str, *, marker: bool) -> tuple[bool, list[tuple[str, str]]]:
    pk = db_uuid(thread_id)
    secret = EnvValue.Type.SECRET.value
    params = [pk, secret, secret, secret, pk]
    if marker:
        params.insert(0, pk)  # the marker row's own thread id comes first
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    found = any(scope == "" for scope, _, _ in rows)
    secrets = [
        (key if scope in OWNED_SCOPES else "", decrypt(ciphertext))
        for scope, key, ciphertext in rows
        if scope != ""
    ]
    return found, secrets


def thread_redactor(thread_id: str) -> Redactor:
    """A redactor for every secret the thread can resolve (for an unknown thread: the
    instance and definition-level ones, which over-redacts, harmlessly)."""
    # One query per request that shows thread content (pages, posts, sockets).
    try:
        return Redactor(_secret_rows(str(thread_id)))
    except (ValueError, ValidationError):  # not a thread id at all
        return Redactor()


# A person's user stream carries what user endpoints and hooks emit: the secrets any of the
# person's threads could resolve, bar thread-scoped ones (those belong to one thread).
_USER_SECRETS_SQL = (
    f"SELECT scope, key, ciphertext FROM {_ENV} WHERE "
    "scope IN ('agent', 'prompt') "
    "OR (scope = 'instance' AND value_type = %s) "
    "OR (scope = 'user' AND value_type = %s AND user_id = %s)"
)


def user_redactor(user_id: int) -> Redactor:
    """A redactor for what ``user_id``'s user event stream sends (the thread frames' rule:
    their own secrets by name, the instance's, agents' and prompts' unnamed)."""
    secret = EnvValue.Type.SECRET.value
    with connection.cursor() as cursor:
        cursor.execute(_USER_SECRETS_SQL, [secret, secret, int(user_id)])
        rows = cursor.fetchall()
    return Redactor(
        [
            (key if scope in OWNED_SCOPES else "", decrypt(ciphertext))
            for scope, key, ciphertext in rows
        ]
    )


def redact_for_thread(thread_id: str, data: Any) -> Any:
    """A copy of ``data`` (str, dict, list, …) with the thread's secrets replaced."""
    return thread_redactor(thread_id).data(data)


class RedactingSink:
    """An ``EventSink`` that redacts each frame before handing it to ``inner``.

    Loading secrets queries the database, so ``emit`` must be called from sync
    code (or build the sink's cache ahead with ``await sync_to_async(sink.prime)(id)``).
    """

    def __init__(self, inner: EventSink) -> None:
        self.inner = inner
        self._cache: dict[str, tuple[float, Redactor]] = {}

    def prime(self, thread_id: str) -> Redactor:
        """Load (or reload) the redactor of ``thread_id``."""
        redactor = thread_redactor(thread_id)
        self._cache[thread_id] = (time.monotonic(), redactor)
        return redactor

    def redactor(self, thread_id: str) -> Redactor:
        cached = self._cache.get(thread_id)
        if cached is None or time.monotonic() - cached[0] > REFRESH_SECONDS:
            return self.prime(thread_id)
        return cached[1]

    def emit(self, thread_id: str, frame: Frame) -> None:
        """Redact ``frame`` and pass it on."""
        self.inner.emit(thread_id, self.redactor(thread_id).data(frame))


class RedactorCache:
    """Redactors by thread id, each loaded once and reused for ``max_age`` seconds.

    One per HTTP request or per WebSocket consumer: the secrets are read from the
    database once, not once per response value or frame.
    """

    def __init__(self, max_age: float = REFRESH_SECONDS) -> None:
        self.max_age = max_age
        self._cache: dict[str, tuple[float, Redactor]] = {}

    def get(self, thread_id: str) -> Redactor:
        """The thread's redactor (sync: may query the database)."""
        key = str(thread_id)
        cached = self._cache.get(key)
        if cached is None or time.monotonic() - cached[0] > self.max_age:
            cached = (time.monotonic(), thread_redactor(key))
            self._cache[key] = cached
        return cached[1]

    def fresh(self, thread_id: str) -> Redactor | None:
        """The cached redactor if it is still fresh (no database access), else ``None``."""
        cached = self._cache.get(str(thread_id))
        if cached is None or time.monotonic() - cached[0] > self.max_age:
            return None
        return cached[1]
