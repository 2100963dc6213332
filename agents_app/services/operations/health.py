"""Health checks of the processes of the production topology (``manage.py healthcheck``).

Each answers one question a container orchestrator can act on: does this process do its
job right now? A check raises ``Unhealthy`` with a reason; it never changes anything.
"""

from __future__ import annotations

import socket

import httpx
from django.conf import settings
from django.db import connection


class Unhealthy(Exception):
    """The process cannot do its job now (the message says why)."""


def check_database() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        raise Unhealthy(f"database: {exc}") from exc


def check_broker() -> None:
    from studio.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=5)
    except Exception as exc:
        raise Unhealthy(f"broker: {exc}") from exc


def check_worker(node: str | None = None) -> None:
    """The worker answers a ping over the broker (its consumer loop is alive)."""
    from studio.celery import app

    node = node or f"celery@{socket.gethostname()}"
    try:
        replies = app.control.ping(destination=[node], timeout=5)
    except Exception as exc:
        raise Unhealthy(f"worker {node}: {exc}") from exc
    if not replies:
        raise Unhealthy(f"worker {node}: no answer to a ping within 5 s")


def check_web(port: int = 8000) -> None:
    """Daphne answers HTTP through Django. Sent with a Host the site accepts, so the check
    is not logged as a DisallowedHost; any answer below 500 (a redirect to HTTPS too)."""
    host = next((h.lstrip(".") for h in settings.ALLOWED_HOSTS if h != "*"), "localhost")
    try:
        response = httpx.get(
            f"http://127.0.0.1:{port}/api/auth/csrf", headers={"Host": host}, timeout=5
        )
    except httpx.HTTPError as exc:
        raise Unhealthy(f"web: {exc}") from exc
    if response.status_code >= 500:
        raise Unhealthy(f"web: HTTP {response.status_code}")


def check_role(role: str, *, port: int = 8000, node: str | None = None) -> None:
    """The checks of one process of the topology: ``web``, ``worker`` or ``beat``."""
    if role == "web":
        check_web(port)
    elif role == "worker":
        check_database()
        check_worker(node)
    elif role == "beat":
        check_database()
        check_broker()
    else:
        raise ValueError(f"Unknown role {role!r}")


ROLES = ("beat", "web", "worker")
