"""At most a few requests run their synchronous part at once in one ASGI process.

Daphne runs each request's middleware and view on a thread of its own, and one event loop
thread relays every WebSocket frame of the process. A burst of requests (a hundred users
posting at once, every browser reloading after a deploy) put dozens of threads on the GIL
next to that loop: the loop got it a fraction of the time, and tokens already streaming to
other sockets waited hundreds of milliseconds (issue #21: the bench's p99 at 100 sessions
fell from 270 ms to 58 ms when at most four requests ran at once, with the same number of
sessions started per second, since the requests share one core anyway).

``ViewGate`` (first in ``MIDDLEWARE``) lets ``STUDIO_WEB_VIEW_CONCURRENCY`` requests (default
2; 0 turns it off) run at once per process (the bench at 200 sessions: p99 105 ms with 4,
60–64 ms with 2, 64 ms with 1; at 500: 606, 533–546 and 682 ms); the others wait on the event loop, which costs
no thread. A request never waits longer than ``STUDIO_WEB_VIEW_WAIT_MS`` (default 5000):
then it runs anyway, so views that are slow for reasons of their own (a vendor's model
list) delay the queue by at most that, and nothing is ever refused here. The permit covers
the view, not the streaming of a response body. Synchronous servers (WSGI, the test
client) pass straight through.

Django runs a middleware synchronously when the one below it is synchronous, so first in
``MIDDLEWARE`` the gate would pass everything through on an ASGI server too: the studio's
handler (``agents_app/web/request_threads.py``) admits each request itself (``admission``),
on the event loop, once its body is read and before it takes a thread, whenever the gate is
listed here.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _gate(size: int) -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = asyncio.Semaphore(size)
    return gate


class ViewGate:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if not self.is_async:
            return self.get_response(request)
        return self._admit(request)

    async def _admit(self, request: HttpRequest) -> HttpResponseBase:
        run: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
        release = await admission()
        try:
            return await run(request)
        finally:
            if release is not None:
                release()


async def admission() -> Callable[[], None] | None:
    """Wait for one of this process's permits: returns its release, or ``None`` when the gate
    is off or the wait ran out (the request then runs anyway: a slow view elsewhere must not
    hold this one up for ever)."""
    size = int(getattr(settings, "STUDIO_WEB_VIEW_CONCURRENCY", 2))
    if size <= 0:
        return None
    gate = _gate(size)
    wait = int(getattr(settings, "STUDIO_WEB_VIEW_WAIT_MS", 5000)) / 1000
    try:
        async with asyncio.timeout(wait):
            await gate.acquire()
    except TimeoutError:
        return None
    return gate.release
