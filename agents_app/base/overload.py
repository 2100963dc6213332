"""Overload and outages answer 503 with ``Retry-After`` in JSON, never an HTML error page.

An *overload* is a failure of a service the request needs, not of the request: the database
refused or dropped the connection (too many connections, a restart, a statement timeout,
a deadlock), or the broker / Redis is unreachable on a path that needs it. The client may
retry the same request; with an ``Idempotency-Key`` that never duplicates a write.

Three places use ``overload_response``: the API's exception handler (``agents_app.api``),
``OverloadMiddleware`` for views outside the API, and ``server_error`` (``handler500``) for
whatever else escapes, e.g. a middleware that met the database.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

import psycopg
from django.conf import settings
from django.db import InterfaceError as DbInterfaceError
from django.db import OperationalError as DbOperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger("agents_app.base.overload")

DB_BUSY = "Service temporarily unavailable: the database is overloaded or unreachable"
BROKER_DOWN = "Service temporarily unavailable: the message broker is unreachable"
INTERNAL = "Internal error"


# Django wraps the database driver's errors; the engine's own commit connection
# (``bridge.async_commit``) raises psycopg's directly.
DB_ERRORS: tuple[type[BaseException], ...] = (
    DbOperationalError,
    DbInterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)
BROKER_ERRORS: tuple[type[BaseException], ...] = (
    KombuOperationalError,
    RedisConnectionError,
    RedisTimeoutError,
)


def overload_reason(exc: BaseException) -> str | None:
    """The sentence for a service outage (``None``: not an overload, a real bug)."""
    if isinstance(exc, DB_ERRORS):
        # SQLite (embedded mode) reports its own SQL errors as OperationalError too: only a
        # locked database is an overload there.
        if isinstance(exc.__cause__, sqlite3.Error) and "locked" not in str(exc):
            return None
        return DB_BUSY
    if isinstance(exc, BROKER_ERRORS):
        return BROKER_DOWN
    return None


def wants_json(request: HttpRequest) -> bool:
    """API paths, and clients that ask for JSON (``Accept`` or a JSON body)."""
    if request.path == "/api" or request.path.startswith("/api/"):
        return True
    accept = request.headers.get("Accept", "")
    kind = request.headers.get("Content-Type", "")
    return "application/json" in accept or kind.startswith("application/json")


def retry_after() -> str:
    return str(settings.STUDIO_OVERLOAD_RETRY_AFTER_SECONDS)


def overload_response(request: HttpRequest, reason: str) -> HttpResponse:
    """503 with ``Retry-After``: JSON ``{"error"}`` for API/JSON clients, plain text else."""
    sentence = f"{reason}; retry in {retry_after()} seconds."
    response: HttpResponse
    if wants_json(request):
        response = JsonResponse({"error": sentence}, status=503)
    else:
        response = HttpResponse(sentence, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = retry_after()
    return response


def log_overload(request: HttpRequest, exc: BaseException) -> None:
    # One line, no traceback: under overload a traceback per request floods the logs.
    logger.warning("503 for %s %s: %s: %s", request.method, request.path, type(exc).__name__, exc)


class OverloadMiddleware:
    """Outside the API (whose exception handler does the same): an outage raised by a view
    becomes a 503 with ``Retry-After``, and API/JSON clients never get an HTML page."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        reason = overload_reason(exception)
        if reason is not None:
            log_overload(request, exception)
            return overload_response(request, reason)
        if wants_json(request) and not settings.DEBUG:
            logger.error(
                "Unhandled error in %s %s", request.method, request.path, exc_info=exception
            )
            return JsonResponse({"error": INTERNAL}, status=500)
        return None  # Django's own 500 handling (logged), and server_error below


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """``handler500``: what escaped everything else (Django has logged it already)."""
    exc = sys.exc_info()[1]
    reason = overload_reason(exc) if exc is not None else None
    if reason is not None:
        return overload_response(request, reason)
    if wants_json(request):
        return JsonResponse({"error": INTERNAL}, status=500)
    from django.views.defaults import server_error as html_server_error

    return html_server_error(request)
