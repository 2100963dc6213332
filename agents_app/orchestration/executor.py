"""Where sessions run: Celery workers, or this process (embedded mode).

``dispatch(session_id)`` is called on commit by the services. With
``STUDIO_EXECUTOR = "celery"`` it enqueues ``agents_app.tasks.session_tasks.run_session``;
with ``"inprocess"`` (the default without ``REDIS_URL``) it schedules
``runner.run_session_job`` on an event loop of this process: the ASGI server's
loop when one is known (so the in-memory channel layer, which is bound to that
loop, reaches the consumers), else a private background loop (management
commands, tests). The in-process executor also runs the periodic sweep, so a
session interrupted by a restart resumes. ``"none"`` dispatches nothing
(sessions are then run explicitly, e.g. by tests).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from concurrent.futures import Future
from typing import Any

from asgiref.sync import sync_to_async
from celery import current_app
from django.conf import settings

from agents_app.base.task_names import RUN_SESSION
from agents_app.orchestration.session_publish import direct_publisher
from runtime.core import tracing
from studio.event_loop import new_loop

logger = logging.getLogger("agents_app.orchestration.executor")


class InProcessExecutor:
    """Runs session jobs as asyncio tasks on one loop of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._own: threading.Thread | None = None
        self._sweeping: set[asyncio.AbstractEventLoop] = set()
        self.futures: list[Future[Any]] = []

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` (the ASGI server's) from now on; called for every ASGI request."""
        if self._loop is loop:
            return
        with self._lock:
            # The first loop wins; a private loop started before the server's is kept
            # (its sessions are running on it) unless it has stopped.
            if self._loop is None or not self._loop.is_running():
                self._loop = loop

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or not self._loop.is_running() and self._own is None:
                self._loop = new_loop()
                self._own = threading.Thread(
                    target=self._loop.run_forever, name="studio-sessions", daemon=True
                )
                self._own.start()
            return self._loop

    def running_loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop sessions run on, if one is running (to close what lives on it)."""
        loop = self._loop
        return loop if loop is not None and loop.is_running() else None

    def close(self) -> None:
        """Cancel every task on the loop this executor started and stop it (a loop it was
        handed by the ASGI server is that server's to stop). For a process that goes on
        after its sessions must end: the test run, before its database is dropped."""
        with self._lock:
            loop, own = self._loop, self._own
            if own is None or loop is None:
                return
            self._loop, self._own = None, None
            self._sweeping.discard(loop)

        def cancel_all() -> None:
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.call_soon(loop.stop)  # after the cancelled tasks have had their turn

        if loop.is_running():
            loop.call_soon_threadsafe(cancel_all)
            if threading.current_thread() is not own:  # a job closing it cannot wait for itself
                own.join(timeout=10)

    def submit(self, coro: Any) -> Future[Any]:
        loop = self.loop()
        if loop not in self._sweeping:
            self._sweeping.add(loop)
            run_detached(_sweep_forever(self), loop)
        future = run_detached(coro, loop)
        future.add_done_callback(_log_failure)
        self.futures = [f for f in self.futures if not f.done()] + [future]
        return future


def run_detached(coro: Any, loop: asyncio.AbstractEventLoop) -> Future[Any]:
    """Like ``asyncio.run_coroutine_threadsafe``, but the task starts with an empty context.

    Called from a request's thread, the plain version would copy that request's context
    into the task, including asgiref's per-request executor: once the request ends, every
    ``sync_to_async`` of the task fails with "CurrentThreadExecutor already quit".
    """
    future: Future[Any] = Future()

    def done(task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            future.cancel()
        elif task.exception() is not None:
            future.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            future.set_result(task.result())

    def start() -> None:
        loop.create_task(coro, context=contextvars.Context()).add_done_callback(done)

    loop.call_soon_threadsafe(start, context=contextvars.Context())
    return future


def _log_failure(future: Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.error("session job failed", exc_info=future.exception())


async def _sweep_forever(executor: InProcessExecutor) -> None:
    """The ``sessions`` jobs of ``agents_app/base/periodic_jobs.py`` (no beat here): sessions to
    run again, tool waits that ran out, eval runs to advance."""
    from agents_app.orchestration.periodic import SESSIONS, sessions_tick
    from agents_app.orchestration.runner import run_session_job

    while True:
        await asyncio.sleep(settings.STUDIO_SESSION_SWEEP_SECONDS)
        try:
            for session_id in await sync_to_async(sessions_tick)():
                asyncio.get_running_loop().create_task(run_session_job(session_id))
            for work in SESSIONS.values():
                if work is not sessions_tick:
                    await sync_to_async(work)()
        except Exception:
            logger.warning("session sweep failed", exc_info=True)
            from agents_app.orchestration.db_retry import drop_broken_connections

            await sync_to_async(drop_broken_connections)()


inprocess = InProcessExecutor()

_PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}


def dispatch(session_id: str) -> None:
    """Start (or resume) a session somewhere; duplicates are harmless (the claim decides)."""
    mode = settings.STUDIO_EXECUTOR
    if mode == "celery":
        # One LPUSH on a kept Redis client where it can (orchestration/session_publish.py:
        # kombu builds a client per publish); with tracing on, Celery's publish signals
        # carry the trace context, so Celery publishes.
        publisher = None if tracing.enabled() else direct_publisher(current_app)
        if publisher is not None:
            publisher.publish(RUN_SESSION, (session_id,))
            return
        # Sent by name: the task's module (agents_app.tasks.session_tasks) imports this one, and the
        # dispatch needs only the broker. A short publish retry: this runs after a
        # request's commit, and with the broker down the session waits for the sweep anyway
        # (agents_app/base/dispatch.py); kombu's default policy (3 retries) held each request
        # 0.6 s, this one 0.02 s (connection refused).
        current_app.send_task(RUN_SESSION, (session_id,), retry=True, retry_policy=_PUBLISH_RETRY)
    elif mode == "inprocess":
        from agents_app.orchestration.runner import run_session_job

        inprocess.submit(run_session_job(session_id, trace_carrier=tracing.current_carrier()))
    elif mode != "none":
        raise ValueError(f"Unknown STUDIO_EXECUTOR {mode!r}")


class LoopCapture:
    """ASGI middleware: tell the in-process executor which loop serves the app."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        inprocess.bind_loop(asyncio.get_running_loop())
        # Embedded mode has no Celery beat: the effect sweeper and the schedule and webhook
        # sweeps run in-process (idempotent).
        from agents_app.orchestration import effect_runner, embedded_automation

        effect_runner.start_embedded_sweeper(inprocess.loop)
        embedded_automation.start(inprocess.loop())
        return await self.app(scope, receive, send)
