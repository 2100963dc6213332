"""Running claimed effect runs: the sweep loop shared by Celery ticks and the embedded sweeper.

``drain(window)`` claims due runs (``services.sessions.effects.effects_claim``: ``FOR UPDATE
SKIP LOCKED``) and runs each one as an asyncio task on one engine (one
``LiveSink``), polling for newly due runs every ``STUDIO_EFFECT_POLL_MS`` until
``window`` seconds have passed, then waits for the runs it started. While it
holds runs it refreshes their heartbeat; every ``STUDIO_EFFECT_RECOVER_SECONDS``
it takes back runs whose worker stopped heartbeating.

- Celery (``STUDIO_EXECUTOR = "celery"``): beat sends ``agents_app.effects_tick``
  every ``STUDIO_EFFECT_SWEEP_MS``; the tick runs ``drain`` for about that long.
- Embedded (``"inprocess"``): ``start_embedded_sweeper()`` runs ``drain`` forever on
  the in-process executor's loop (the ASGI server's loop once it is known, so the
  in-memory channel layer reaches the consumers).

A run's outcome is written with ``effect_finish`` (guarded by the claim), and every
transition goes out as ``effect_changed`` through the sink after its commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings

from agents_app.base import faults
from agents_app.bridge.store import effect_record
from agents_app.broadcast.events import LiveSink
from agents_app.models import ScheduledEffect
from agents_app.orchestration.db_retry import CONNECTION_ERRORS, OutageLog, drop_broken_connections
from agents_app.orchestration.engines import build_engine
from agents_app.services.sessions import effects as effect_service
from runtime.effects import describe_error, is_permanent, run_effect
from runtime.engine import Engine

logger = logging.getLogger("agents_app.effects")
_outage = OutageLog(logger, "effect sweep")
_recover_lock = threading.Lock()
_last_recover = 0.0


def new_owner() -> str:
    """A claim token: host, pid and a random suffix (one per drain; pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Sweeper:
    """One ``drain``: the runs it holds, their heartbeat, and how it announces changes."""

    def __init__(self, owner: str, sink: LiveSink, engine: Engine) -> None:
        self.owner, self.sink, self.engine = owner, sink, engine
        self.running: set[asyncio.Task[Any]] = set()
        self.claimed = 0

    def announce(self, rows: list[ScheduledEffect]) -> None:
        for row in rows:
            self.sink.emit(str(row.thread_id), effect_service.effect_changed(row))

    def start(self, row: ScheduledEffect, *, retry: bool = True) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(self.run(row, retry=retry))
        self.running.add(task)
        task.add_done_callback(self.running.discard)
        return task

    async def run(self, row: ScheduledEffect, *, retry: bool = True) -> ScheduledEffect | None:
        """Run one claimed row's handler and record the outcome (never raises an Exception)."""
        error, permanent = None, False
        limit = asyncio.timeout(settings.STUDIO_EFFECT_TIMEOUT_SECONDS)
        try:
            async with limit:
                await run_effect(self.engine, effect_record(row))
        except Exception as exc:  # a failed run is data on its row, not a crash of the sweeper
            error, permanent = describe_error(exc), is_permanent(exc)
            if isinstance(exc, TimeoutError) and limit.expired():
                error = f"TimeoutError: ran longer than {settings.STUDIO_EFFECT_TIMEOUT_SECONDS} s"
        if error is not None:
            logger.warning("effect %s (%s) failed: %s", row.pk, row.name, error)
        done = await sync_to_async(effect_service.effect_finish)(
            row=row, owner=self.owner, error=error, permanent=permanent, retry=retry
        )
        if done is not None:
            self.announce([done])
        return done

    async def heartbeat(self) -> None:
        """Keep the heartbeat of held runs fresh (one UPDATE for all of them)."""
        while True:
            await asyncio.sleep(settings.STUDIO_EFFECT_HEARTBEAT_SECONDS)
            if not self.running:
                continue
            try:
                await sync_to_async(effect_service.effects_heartbeat)(owner=self.owner)
            except CONNECTION_ERRORS as exc:
                await sync_to_async(_outage.failed)(exc)
            except Exception:
                logger.warning("effect heartbeat failed", exc_info=True)

    async def claim(self) -> int:
        """Claim what is due (as many as free slots allow) and start running it."""
        await sync_to_async(faults.hit)("effects_sweep")
        free = settings.STUDIO_EFFECT_CONCURRENCY - len(self.running)
        if free <= 0 or not await sync_to_async(effect_service.effects_due_exist)():
            return 0
        rows = await sync_to_async(effect_service.effects_claim)(
            owner=self.owner, limit=min(free, settings.STUDIO_EFFECT_BATCH)
        )
        self.announce(rows)
        for row in rows:
            self.start(row)
        self.claimed += len(rows)
        return len(rows)

    async def recover(self) -> None:
        """Take back runs of dead workers, at most every ``STUDIO_EFFECT_RECOVER_SECONDS``
        per process (the UPDATE is conditional: concurrent recoveries are harmless)."""
        global _last_recover
        with _recover_lock:
            if time.monotonic() - _last_recover < settings.STUDIO_EFFECT_RECOVER_SECONDS:
                return
            _last_recover = time.monotonic()
        rows = await sync_to_async(effect_service.effects_recover)(
            stale_seconds=settings.STUDIO_EFFECT_STALE_SECONDS
        )
        self.announce(rows)


async def drain(window: float | None, *, owner: str | None = None) -> int:
    """Claim and run due effects for ``window`` seconds (``None``: until cancelled); how many
    runs it claimed. Returns after the runs it started have finished."""
    sink = LiveSink()
    sweeper = Sweeper(owner or new_owner(), sink, build_engine(sink=sink))
    beat = asyncio.get_running_loop().create_task(sweeper.heartbeat())
    deadline = None if window is None else time.monotonic() + window
    poll = settings.STUDIO_EFFECT_POLL_MS / 1000
    try:
        while True:
            try:
                await sweeper.recover()
                full = await sweeper.claim() >= settings.STUDIO_EFFECT_BATCH
                _outage.succeeded()
            except CONNECTION_ERRORS as exc:  # the database is restarting: try at the next poll
                await sync_to_async(_outage.failed)(exc)
                full = False
            except Exception:
                logger.warning("effect sweep failed", exc_info=True)
                await sync_to_async(drop_broken_connections)()
                full = False
            if deadline is not None and time.monotonic() >= deadline:
                break
            if not full:
                await asyncio.sleep(poll)
        if sweeper.running:
            await asyncio.gather(*list(sweeper.running), return_exceptions=True)
    finally:
        beat.cancel()
        await sink.flush()
    return sweeper.claimed


def drain_for(window: float) -> int:
    """``drain`` from sync code (a Celery task): a private event loop for this call."""
    return int(async_to_sync(drain)(window))


async def run_now(row: ScheduledEffect, owner: str) -> dict[str, Any]:
    """Run one row claimed by ``owner`` (run now / replay) without retries; its outcome."""
    sink = LiveSink()
    sweeper = Sweeper(owner, sink, build_engine(sink=sink))
    beat = asyncio.get_running_loop().create_task(sweeper.heartbeat())
    try:
        done = await sweeper.start(row, retry=False)
    finally:
        beat.cancel()
        await sink.flush()
    if done is None:
        return {"status": ScheduledEffect.Status.PROCESSING, "error": None}
    return {"status": done.status, "error": done.error or None}


def effect_run(*, effect: ScheduledEffect, owner: str = "api") -> dict[str, Any]:
    """Run a pending effect now, or replay a finished one as a new linked run, in this request
    (API and admin).

    Manual runs are not retried: the outcome (``status``, ``error``) is in the answer.
    ``Conflict`` when the run is already processing.
    """
    token = f"{owner}:{uuid.uuid4().hex[:12]}"
    if effect.status in effect_service.TERMINAL:
        replay = effect_service.effect_replay(effect=effect, owner=token)
        done = async_to_sync(run_now)(replay, token)
        return {"action": "replayed", "id": str(effect.pk), "replayedId": str(replay.pk), **done}
    row = effect_service.effect_claim_now(effect=effect, owner=token)
    return {"action": "ran", "id": str(effect.pk), **async_to_sync(run_now)(row, token)}


# --- embedded mode ------------------------------------------------------------------------------


class EmbeddedSweeper:
    """``drain`` forever on one loop; ``stop()`` cancels it (tests, shutdown)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: Future[None] = asyncio.run_coroutine_threadsafe(self._forever(), loop)

    async def _forever(self) -> None:
        while True:
            try:
                await drain(None)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("embedded effect sweeper restarting", exc_info=True)
                await asyncio.sleep(1)

    def stop(self, timeout: float = 10) -> None:
        # A loop that no longer runs (a finished test's, a shut-down server's) runs nothing more.
        if self.loop.is_closed() or not self.loop.is_running():
            return
        self.loop.call_soon_threadsafe(self.future.cancel)
        with contextlib.suppress(BaseException):  # cancelled, as asked
            self.future.result(timeout)


_embedded: EmbeddedSweeper | None = None
_embedded_lock = threading.Lock()


def start_embedded_sweeper(
    loop_of: Callable[[], asyncio.AbstractEventLoop],
) -> EmbeddedSweeper | None:
    """Start the in-process sweeper once per process (``STUDIO_EXECUTOR == "inprocess"``) on
    the loop ``loop_of`` gives (the in-process executor's: ``executor.LoopCapture`` passes
    it, so this module never imports the executor).

    Call it when the server starts (idempotent); other executors return ``None``.
    """
    global _embedded
    if settings.STUDIO_EXECUTOR != "inprocess":
        return None
    with _embedded_lock:
        if _embedded is None or _embedded.future.done():
            _embedded = EmbeddedSweeper(loop_of())
        return _embedded


def stop_embedded_sweeper() -> None:
    global _embedded
    with _embedded_lock:
        sweeper, _embedded = _embedded, None
    if sweeper is not None:
        sweeper.stop()
