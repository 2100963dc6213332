"""Warm-up at process start: import and build now what the first request or session would.

Measured on the bench box (issue #21): a fresh Daphne spent ~0.5 s resolving its URLconf
(importing every API module) at its first request and ~90 ms finalizing Celery and loading
kombu's Redis transport at its first dispatch (and ~50 ms more resolving the result
backend from the installed packages' entry points, seen in the thirteenth round); a fresh
worker ~0.2 s importing httpx's transports, the provider factories and the channel layer
at its first session. After a deploy, that lands on the first burst of users, under the
GIL every socket and session of the process shares. Done before the process serves anything, it costs nothing later, and
``studio.process_tuning.settle`` then freezes it with the rest of start-up.

Nothing here touches the network: a Redis or PostgreSQL that is down at start-up is the
health checks' business, not a reason for the process not to start. A step that fails is
logged and skipped; the first request or session then pays for it as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger("agents_app.orchestration.warm_up")


def _step(name: str, fn: Callable[[], object]) -> bool:
    try:
        fn()
    except Exception as exc:
        logger.warning("warm-up step %r failed (%s: %s); skipped", name, type(exc).__name__, exc)
        return False
    return True


def _urls() -> None:
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (the property imports the whole URLconf)


def _celery_producer() -> None:
    from django.conf import settings

    if settings.STUDIO_EXECUTOR != "celery":
        return
    from celery import current_app  # the app a post dispatches with (executor.dispatch)

    app = current_app
    app.finalize(auto=True)
    connection = app.connection_for_write()
    try:
        connection.transport  # noqa: B018  (loads the transport class; connects nothing)
    finally:
        connection.release()
    app.amqp  # noqa: B018
    app.producer_pool  # noqa: B018
    # Every dispatch returns an AsyncResult, which asks for the result backend; resolving it
    # reads every installed package's entry points from disk (~50 ms on the bench box, in
    # the first post of a burst).
    app.backend  # noqa: B018


def _channel_layer() -> None:
    from channels.layers import get_channel_layer

    get_channel_layer()


def _engine() -> None:
    import httpx

    import agents_app.orchestration.runner  # noqa: F401  (what a session job imports)
    from agents_app.bridge.store import DjangoStore
    from agents_app.orchestration.engines import build_engine

    # An engine with the HTTP adapters and the configured provider factories, as a session
    # builds it; the client opens no connection until a request.
    build_engine(store=DjangoStore(), http=httpx.AsyncClient())


def warm_web() -> list[str]:
    """For the ASGI server; returns the steps that worked."""
    steps = {"urls": _urls, "celery producer": _celery_producer, "channel layer": _channel_layer}
    return [name for name, fn in steps.items() if _step(name, fn)]


def warm_worker() -> list[str]:
    """For a Celery worker; returns the steps that worked."""
    steps = {"engine": _engine, "channel layer": _channel_layer}
    return [name for name, fn in steps.items() if _step(name, fn)]
