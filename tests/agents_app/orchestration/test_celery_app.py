"""The Celery app as the web process uses it to dispatch sessions (issue #21)."""

from __future__ import annotations

import threading
from typing import Any

from celery.backends.base import DisabledBackend

from agents_app.tasks.session_tasks import run_session
from studio.celery import app


def _from_new_threads(read: Any, count: int = 3) -> list[Any]:
    seen: list[Any] = []
    for _ in range(count):  # one after the other, as requests come
        thread = threading.Thread(target=lambda: seen.append(read()))
        thread.start()
        thread.join()
    return seen


def test_every_thread_shares_one_result_backend() -> None:
    """Daphne runs each request's view in a new thread: a backend per thread was built (and
    every installed package's entry points scanned) at every dispatch."""
    seen = _from_new_threads(lambda: app.backend)
    assert isinstance(seen[0], DisabledBackend)
    assert all(backend is seen[0] for backend in seen)


def test_the_session_task_keeps_no_results() -> None:
    seen = _from_new_threads(lambda: run_session.backend)
    assert all(backend is app.backend for backend in seen)
    assert run_session.ignore_result
