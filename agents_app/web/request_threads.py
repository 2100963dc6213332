"""HTTP requests run their synchronous part on a few long-lived threads.

Django's ASGI handler gives every request a thread of its own: asgiref's
``ThreadSensitiveContext`` makes a one-thread executor per request and shuts it down after.
Each new thread also builds a new ``DatabaseWrapper`` (Django's connections are per thread)
with its operations, features and introspection objects, all of which point at each other,
so when the thread ends they are garbage the reference counts cannot free. A burst of posts
left ~180 such objects per request for the garbage collector, and its full collections
stop the whole process (every socket it relays) for tens of milliseconds at a few hundred
sockets (issue #21, "Tenth round" in bench/history.md).

``PooledRequestsHandler`` keeps ``STUDIO_WEB_REQUEST_THREADS`` one-thread executors. A request
takes one for its whole life, so its synchronous parts still run one at a time on one
thread as Django expects, and gives it back after; when every kept thread is taken, the
request gets a thread of its own as before (it never waits for one). A thread with work
still pending after its request (a task the request started and did not wait for; a view
whose client went away still runs to its end before the request is over) is let go, not
reused. This is how WSGI servers run Django: a few threads, each serving one request after
another.

One hop into the thread per request, not three. Django's ASGI handler builds the middleware
chain for async: the synchronous middleware runs on the request's thread, calls back to the
event loop for the URL and the view (``async_to_sync``), which hands a synchronous view to
the same thread again (``sync_to_async``): every post crossed between the loop and its
thread four times, each crossing a future, a wake-up of the other side and a GIL hand-over
(issue #21). ``PooledRequestsHandler`` builds the synchronous chain WSGI servers run (the
same middleware, the same exception handling) and crosses into it once.

The view gate (``agents_app/web/view_gate.py``) admits a request here, on the loop, once its
body is read and before it asks for a thread: a request waiting for a permit holds no
thread (the kept thread is taken at the request's first synchronous call, by
``LentThread``), and the permit goes back when the view has answered, before the body is
sent.

Two more cycles per request are Django's, and everything a request holds (its headers, body,
URL match) waited in them for the collector: ``listen_for_disconnect`` raises
``RequestAborted`` when the client's disconnect arrives, only for ``handle`` to ignore it (an
exception with its traceback), so here the task just ends; and the authentication
middleware's ``request.user`` (a lazy object whose function closes over the request) and
``request.auser`` (a partial of it), and the messages middleware's storage (which holds the
request), all dropped once the request is over.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import IO, Any

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.http import HttpRequest, HttpResponseBase

from agents_app.web.view_gate import ViewGate, admission

# The requests a handler call made (one, or none for a request it refused early).
_made: ContextVar[list[HttpRequest]] = ContextVar("requests_made")
# What the authentication and messages middleware leave on a request that points back at it.
_CYCLIC = ("user", "auser", "_cached_user", "_acached_user", "_messages")
VIEW_GATE = f"{ViewGate.__module__}.{ViewGate.__qualname__}"


class RequestThread(ThreadPoolExecutor):
    """One thread; knows whether work submitted to it is still pending or running."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="request")
        self._pending = 0
        self._lock = threading.Lock()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            self._pending += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._done)
        return future

    def _done(self, _: Future[Any]) -> None:
        with self._lock:
            self._pending -= 1

    @property
    def idle(self) -> bool:
        return self._pending == 0


class RequestThreads:
    """The kept threads of one process (checked out and in on its event loop)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._idle: deque[RequestThread] = deque()
        self.kept = 0  # threads this pool owns, idle or taken

    def take(self) -> tuple[RequestThread, bool]:
        """A thread for one request, and whether the pool keeps it afterwards."""
        if self._idle:
            return self._idle.pop(), True
        if self.kept < self.size:
            self.kept += 1
            return RequestThread(), True
        return RequestThread(), False

    def give_back(self, thread: RequestThread, kept: bool) -> None:
        if kept and thread.idle:
            self._idle.append(thread)
            return
        if kept:
            self.kept -= 1  # still busy after its request: let it finish and go
        thread.shutdown(wait=False)


_threads: RequestThreads | None = None


def request_threads() -> RequestThreads:
    global _threads
    if _threads is None:
        _threads = RequestThreads(settings.STUDIO_WEB_REQUEST_THREADS)
    return _threads


class LentThread(Executor):
    """The request's thread: taken from the pool at its first synchronous call (so a request
    waiting at the gate holds none), given back when the request is over."""

    def __init__(self, threads: RequestThreads) -> None:
        self._threads = threads
        self._thread: RequestThread | None = None
        self._kept = False

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        # Called on the event loop (``run_in_executor``), like ``take`` and ``give_back``.
        if self._thread is None:
            self._thread, self._kept = self._threads.take()
        return self._thread.submit(fn, *args, **kwargs)

    def give_back(self) -> None:
        if self._thread is not None:
            self._threads.give_back(self._thread, self._kept)
            self._thread = None


class _Permit:
    """The request's permit from the view gate, if it holds one."""

    def __init__(self) -> None:
        self._release: Callable[[], None] | None = None

    def hold(self, release: Callable[[], None] | None) -> None:
        self._release = release

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


_permit: ContextVar[_Permit] = ContextVar("view_gate_permit")


class PooledRequestsHandler(ASGIHandler):
    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # The gate admits requests here, on the loop, not in the chain (where it passes
        # straight through).
        self._gated = VIEW_GATE in settings.MIDDLEWARE
        if is_async:
            sync_chain: Callable[[HttpRequest], HttpResponseBase] = self._middleware_chain  # type: ignore[has-type]
            self._middleware_chain = sync_to_async(sync_chain, thread_sensitive=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        made: list[HttpRequest] = []
        token = _made.set(made)
        try:
            await self._serve(scope, receive, send)
        finally:
            _made.reset(token)
            for request in made:
                for name in _CYCLIC:
                    request.__dict__.pop(name, None)

    async def _serve(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)  # Django's refusal
            return
        threads = request_threads()
        # Without kept threads, Django's way: a one-thread executor for this request alone.
        lent = LentThread(threads) if threads.size > 0 else None
        permit = _Permit()
        token = _permit.set(permit)
        try:
            async with ThreadSensitiveContext(executor=lent):
                await self.handle(scope, receive, send)
        finally:
            _permit.reset(token)
            permit.release()
            if lent is not None:
                lent.give_back()

    async def read_body(self, receive: Any) -> IO[bytes]:
        """The body, then a permit from the gate: a slow upload holds no permit, and nothing
        of the request has asked for a thread yet (``request_started`` is next)."""
        body: IO[bytes] = await super().read_body(receive)
        permit = _permit.get(None)
        if permit is not None and self._gated:
            try:
                permit.hold(await admission())
            except BaseException:
                body.close()
                raise
        return body

    async def run_get_response(self, request: HttpRequest) -> HttpResponseBase:
        """The view's answer; the permit goes back before the body is sent."""
        try:
            response: HttpResponseBase = await super().run_get_response(request)
            return response
        finally:
            permit = _permit.get(None)
            if permit is not None:
                permit.release()

    def create_request(
        self, scope: Mapping[str, Any], body_file: IO[bytes]
    ) -> tuple[ASGIRequest, None] | tuple[None, HttpResponseBase]:
        made = super().create_request(scope, body_file)
        requests = _made.get(None)
        if requests is not None and made[0] is not None:
            requests.append(made[0])
        return made

    async def listen_for_disconnect(self, receive: Any) -> None:
        message = await receive()
        if message["type"] != "http.disconnect":
            # Django's own answer to this (``handle`` closes the body and re-raises it).
            raise AssertionError(f"Invalid ASGI message after request body: {message['type']}")


def asgi_application() -> PooledRequestsHandler:
    """``django.core.asgi.get_asgi_application`` with the kept request threads."""
    django.setup(set_prefix=False)
    return PooledRequestsHandler()
