"""HTTP requests take turns on a few long-lived threads (``agents_app/web/request_threads.py``).

Django gives every ASGI request a new thread, hence a new ``DatabaseWrapper`` that ends as
cyclic garbage; the pooled handler reuses a few threads and their connections' wrappers, and
never makes a request wait for one.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import JsonResponse
from django.urls import path

from agents_app.web import request_threads
from agents_app.web.request_threads import PooledRequestsHandler, RequestThreads
from tests.agents_app.process.manage_support import check_at_start

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls(__name__),
]

hold = threading.Event()
entered = threading.Event()


def where(request: Any) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    # ``connection`` is a proxy; the wrapper is the thread's own.
    return JsonResponse({"thread": threading.get_ident(), "wrapper": id(connections["default"])})


def held(request: Any) -> JsonResponse:
    entered.set()
    hold.wait(10)
    return where(request)


def hops(request: Any) -> JsonResponse:
    """Whether the view runs under an ``async_to_sync`` (a trip back to the loop and in again)
    and the names of the middleware frames above it."""
    frame, names = sys._getframe(), []
    while frame is not None:
        names.append(frame.f_code.co_qualname)
        frame = frame.f_back  # type: ignore[assignment]
    return JsonResponse({"async_to_sync": "AsyncToSync.__call__" in names, "csp": CSP in names})


CSP = "ContentSecurityPolicyMiddleware.__call__"
urlpatterns = [path("where", where), path("held", held), path("hops", hops)]


@pytest.fixture
def pool() -> Iterator[RequestThreads]:
    threads = RequestThreads(2)
    kept, request_threads._threads = request_threads._threads, threads
    hold.clear()
    entered.clear()
    yield threads
    hold.set()
    request_threads._threads = kept


def _scope(url: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "path": url,
        "raw_path": url.encode(),
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
        "scheme": "http",
        "root_path": "",
    }


async def _get(app: Any, url: str, *, leave: asyncio.Event | None = None) -> Any:
    """One request; ``leave`` set makes the client go away before the answer."""
    sent: list[dict[str, Any]] = []
    answered = asyncio.Event()
    gone = leave or answered
    first = True

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    await app(_scope(url), receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return json.loads(body) if body else None


async def test_requests_one_after_another_run_on_one_kept_thread_and_connection(
    pool: RequestThreads,
) -> None:
    app = PooledRequestsHandler()
    answers = [await _get(app, "/where") for _ in range(3)]
    assert len({a["thread"] for a in answers}) == 1
    assert len({a["wrapper"] for a in answers}) == 1
    assert answers[0]["thread"] != threading.get_ident()
    assert pool.kept == 1


async def test_a_request_crosses_into_its_thread_once(pool: RequestThreads) -> None:
    """The synchronous middleware and the view run in one call on the request's thread, as
    under WSGI: no trip back to the event loop between them (issue #21)."""
    answer = await _get(PooledRequestsHandler(), "/hops")
    assert answer == {"async_to_sync": False, "csp": True}
    # Django's own handler, for contrast: the view sits under an async_to_sync.
    assert (await _get(ASGIHandler(), "/hops"))["async_to_sync"] is True


async def _second_waits_at_the_gate(holds_no_thread: Callable[[], bool]) -> list[Any]:
    """Two held requests through the studio's handler with a gate of one: the second waits
    at the gate (``holds_no_thread`` checked meanwhile) until the first is released."""
    app = PooledRequestsHandler()
    first = asyncio.ensure_future(_get(app, "/held"))
    await asyncio.to_thread(entered.wait, 10)
    entered.clear()
    second = asyncio.ensure_future(_get(app, "/held"))
    await asyncio.sleep(0.2)
    assert not entered.is_set()  # the second waits for the gate, not in a view
    assert holds_no_thread()  # a request waiting at the gate holds no thread
    hold.set()
    return list(await asyncio.gather(first, second))


async def test_the_view_gate_admits_requests_on_the_loop(
    pool: RequestThreads, settings: Any
) -> None:
    """The studio's handler with the studio's middleware: a second request waits at the gate
    while the first holds its permit. Under Django's async chain the gate sat above
    synchronous middleware, so Django ran it synchronously, where it lets everything through:
    ``STUDIO_WEB_VIEW_CONCURRENCY`` did nothing on a real server."""
    settings.STUDIO_WEB_VIEW_CONCURRENCY = 1
    answers = await _second_waits_at_the_gate(lambda: pool.kept == 1)
    assert entered.is_set() and all("thread" in a for a in answers)


async def test_without_kept_threads_the_gate_still_admits(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.STUDIO_WEB_VIEW_CONCURRENCY = 1
    monkeypatch.setattr(request_threads, "_threads", RequestThreads(0))
    hold.clear()
    entered.clear()
    answers = await _second_waits_at_the_gate(lambda: True)
    assert answers[0]["thread"] != answers[1]["thread"]  # Django's way: a thread each


async def test_more_requests_than_kept_threads_never_wait_for_one(pool: RequestThreads) -> None:
    app = PooledRequestsHandler()
    requests = [asyncio.ensure_future(_get(app, "/held")) for _ in range(3)]
    await asyncio.to_thread(entered.wait, 10)
    while not all(t.done() for t in requests):
        # All three views run at once (the third on a thread of its own) until released.
        hold.set()
        await asyncio.sleep(0.01)
    answers = [t.result() for t in requests]
    assert len({a["thread"] for a in answers}) == 3
    assert pool.kept == 2
    again = await _get(app, "/where")
    assert again["thread"] in {a["thread"] for a in answers}


async def test_a_client_that_leaves_mid_view_gives_the_thread_back_once_the_view_ends(
    pool: RequestThreads,
) -> None:
    """asgiref lets a cancelled request's synchronous view run to its end, so the thread
    is idle again when the request is over."""
    app = PooledRequestsHandler()
    leave = asyncio.Event()
    request = asyncio.ensure_future(_get(app, "/held", leave=leave))
    await asyncio.to_thread(entered.wait, 10)
    leave.set()  # the client goes away while the view still runs
    await asyncio.sleep(0.05)
    assert not request.done()
    hold.set()
    assert await request is None  # no answer for a client that left
    assert (pool.kept, len(pool._idle)) == (1, 1)


def test_a_thread_still_busy_after_its_request_is_not_kept() -> None:
    """Work a request left behind on its thread (a task it did not wait for) would hold
    up the next request given that thread: the thread is let go instead."""
    pool = RequestThreads(1)
    thread, kept = pool.take()
    assert kept
    release = threading.Event()
    thread.submit(release.wait, 10)
    pool.give_back(thread, kept)
    assert (pool.kept, len(pool._idle)) == (0, 0)
    release.set()
    again, kept = pool.take()
    assert kept and again is not thread
    again.submit(lambda: None).result(5)
    pool.give_back(again, kept)
    assert (pool.kept, list(pool._idle)) == (1, [again])


def _garbage_of(app: Any) -> list[Any]:
    """The requests and connection wrappers of four requests through ``app`` that were left
    for the cyclic garbage collector (whatever else of the process turns to garbage
    meanwhile, another test's ending thread, is not counted)."""
    wrappers: set[int] = set()

    async def four() -> None:
        for _ in range(4):
            wrappers.add((await _get(app, "/where"))["wrapper"])

    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # kept, not freed: their ids stay theirs
    try:
        asyncio.run(four())
        gc.collect()
        return [
            o
            for o in gc.garbage
            if (isinstance(o, BaseDatabaseWrapper) and id(o) in wrappers)
            or (isinstance(o, ASGIRequest) and o.path == "/where")
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_requests_leave_no_requests_or_connection_wrappers_as_garbage(
    pool: RequestThreads,
) -> None:
    assert _garbage_of(PooledRequestsHandler()) == []
    # Django's own handler (a thread per request) leaves both: the check can fail.
    left = _garbage_of(ASGIHandler())
    assert any(isinstance(o, BaseDatabaseWrapper) for o in left)
    assert any(isinstance(o, ASGIRequest) for o in left)


async def test_a_clients_disconnect_ends_the_listener_without_an_exception() -> None:
    """Django raises ``RequestAborted`` there only for ``handle`` to ignore it: an exception
    and its traceback, a reference cycle per request."""

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    assert await PooledRequestsHandler().listen_for_disconnect(receive) is None
    with pytest.raises(RequestAborted):
        await ASGIHandler().listen_for_disconnect(receive)


def test_a_negative_thread_count_stops_every_process_at_start() -> None:
    done = check_at_start(STUDIO_WEB_REQUEST_THREADS="-1")
    assert done.returncode != 0
    assert "STUDIO_WEB_REQUEST_THREADS must be 0 (a thread per request) or more" in done.stderr
