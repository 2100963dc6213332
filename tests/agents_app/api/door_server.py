"""The live server the doors' tests talk to (``/v1``, ``/a2a``, ``/ag-ui``): import
``server`` and ``_sessions_run`` into a test module.

A uvicorn server in a thread of this process serves ``studio.asgi.application`` (the
production composition: the doors in front of Django) on the test's database, over a real
socket; sessions run on its loop (an in-process executor of its own: a loop another test
module started must not run these sessions), their frames on the test's channel layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from asgiref.sync import sync_to_async
from django.db import connections

from agents_app.bridge import async_commit
from agents_app.orchestration import executor


@pytest.fixture(scope="module")
def server(django_db_setup: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """``studio.asgi.application`` on a free port: its base URL (``http://127.0.0.1:<port>``)."""
    with pytest.MonkeyPatch.context() as patch:
        fresh = executor.InProcessExecutor()
        patch.setattr(executor, "inprocess", fresh)
        from studio.asgi import application

        config = uvicorn.Config(
            application, host="127.0.0.1", port=0, lifespan="off", log_level="warning"
        )
        running = uvicorn.Server(config)
        name = f"{request.module.__name__.rsplit('.', 1)[-1]}-server"
        thread = threading.Thread(target=running.run, name=name, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not running.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        port = running.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            # What the server's requests and sessions left open, as close_thread_connections
            # closes an async test's: the engine's commit connection of the server's loop,
            # and the connection of asgiref's one shared sync thread (a later test without
            # database access would otherwise meet it in close_old_connections).
            with contextlib.suppress(Exception):
                loop = fresh.loop()
                asyncio.run_coroutine_threadsafe(async_commit.close(), loop).result(10)
            running.should_exit = True
            thread.join(15)
            # Its session sweep, if it runs on a loop of its own, ends with the module: one
            # went on polling after the worker's test database was dropped.
            fresh.close()
            asyncio.run(sync_to_async(connections.close_all)())


@pytest.fixture(autouse=True)
def _sessions_run(settings: Any) -> Iterator[None]:
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    settings.STUDIO_EXECUTOR = "inprocess"
    _settle_shared_thread()
    yield
    _settle_shared_thread()


def _settle_shared_thread() -> None:
    """Close the connection of asgiref's shared sync thread unless it is clean.

    The server's requests and sessions reach the ORM through that one thread, whose
    connection outlives a test. Once, in a full run, it came to this module already inside a
    transaction (left by an earlier test of that pytest worker), and every ORM call of the
    server then failed ("can't change 'autocommit' now") until the test timed out. A clean
    connection is kept, as between other tests (``tests/kept_connections.py``).
    """
    from tests.kept_connections import settle_all

    asyncio.run(sync_to_async(settle_all)())


__all__ = ["_sessions_run", "server"]
