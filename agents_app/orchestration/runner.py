"""Running claimed sessions: the engine under supervision, on whatever event loop hosts it.

``run_session_job(session_id)`` is what a Celery task or the in-process executor
runs: claim the row (or exit: a duplicate delivery finds it owned), run the
engine over a ``ClaimedStore``, tidy up after a stop, release the row and go on
with the next queued message while there is one.

A per-loop ``Supervisor`` does the periodic work for every session of the loop
in one query each: heartbeats, and stop requests (the thread's ``stopped``
flag). A stop cancels the engine task, which aborts the request in flight; the
engine is then resumed once so that it records the stop itself (its resume
path ends at once on a stopped thread), and ``stop_cleanup`` answers open tool
calls and stores "Execution stopped by user".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from asgiref.sync import sync_to_async
from django.conf import settings

from agents_app.base import faults
from agents_app.bridge import fast_commit
from agents_app.bridge.pinned import PinnedDefinitions
from agents_app.bridge.store import DjangoStore
from agents_app.broadcast.events import LiveSink, asend_registry, asend_thread_frames
from agents_app.db.raw_sql import db_json, row_by_uuid
from agents_app.models import ThreadSession
from agents_app.orchestration import webhook_runner
from agents_app.orchestration.db_retry import (
    CONNECTION_ERRORS,
    close_failed_connections,
    drop_broken_connections,
    retrying,
)
from agents_app.orchestration.engines import build_engine
from agents_app.orchestration.start_gate import StartSlot, start_gate
from agents_app.selectors import activity_frame, thread_activity
from agents_app.services.env.redaction import redact_for_thread
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.sessions.lifecycle import Claim
from agents_app.wire import RESUME_MARK
from runtime.core import egress, tracing
from runtime.core.outcomes import SessionResult
from runtime.core.progress import SessionProgress
from runtime.definitions.loader import DefinitionNotFound
from runtime.engine import Engine, NewMessage, ThreadTerminated
from runtime.store.protocol import Commit, CommitResult, MessagePage, MessageQuery, ThreadRecord

logger = logging.getLogger("agents_app.orchestration.runner")
OWNER = sessions.owner_id()
STATUS_BY_REASON = {
    "aborted_by_user": ThreadSession.Status.STOPPED,
    "step_error": ThreadSession.Status.FAILED,
    "awaiting_tool": ThreadSession.Status.PARKED,
}


# Pauses between attempts after a connection error, one budget per job; after the last
# one the job gives up and the sweep takes the session (its row is marked stale, or goes
# stale: nothing beats it any more).
RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


class SessionLost(Exception):
    """This process no longer owns the session (it was declared dead and taken over)."""


# --- the store a claimed session writes through ---------------------------------------------


class ClaimedStore(PinnedDefinitions, DjangoStore):
    """``DjangoStore`` whose commits for the claimed thread are fenced by the claim.

    Each commit of the claimed thread goes through the store's one commit path
    (``bridge.store.commit_rows``, one statement on PostgreSQL) with the claim: it
    locks the session row, checks that this process still owns it (else
    ``SessionLost``: nothing is written), applies the engine's commit, removes queue
    rows the commit stored as messages (a posted message becomes the session's first
    message under the same id), and saves the progress on the claimed row with a
    fresh heartbeat, all at once. Commits of other threads (child threads of agents
    called as tools) go through unchanged.
    """

    def __init__(self, claim: Claim) -> None:
        # The session runs on a worker loop, in no caller's transaction: its commits may
        # use the loop's own connection (``bridge/async_commit.py``).
        super().__init__(async_commits=True)
        self.claim = claim
        self.pinned_session_id, self.pinned_thread_id = claim.session_id, claim.thread_id
        # Whether this store committed progress: until it does, the claim's ``progress``
        # (read by the claiming statement, on a row only this process writes) is the row's.
        self.committed = False
        self.finished: SessionProgress | None = None
        # The claimed thread's record as the session's plan read it: the engine's first
        # ``get_thread`` takes it instead of a statement of its own.
        self.read_thread: ThreadRecord | None = None

    @property
    def started(self) -> bool:
        """Whether the session has progress stored: taken over with it, or committed since."""
        return bool(self.claim.progress) or self.committed

    async def commit(self, thread_id: str, commit: Commit) -> CommitResult:
        self.stamp_versions(thread_id, commit)
        if thread_id != self.claim.thread_id:
            return await super().commit(thread_id, commit)
        await faults.ahit("engine_commit")
        claimed = fast_commit.ClaimedRow(self.claim.session_id, owner=self.claim.owner)
        try:
            result = await self.commit_claimed(thread_id, commit, claimed)
        except fast_commit.NotOwner:
            raise SessionLost(self.claim.session_id) from None
        if commit.progress is not None:
            self.committed = True
            if commit.progress.finished:
                self.finished = commit.progress
        return result

    async def load_progress(self, thread_id: str) -> SessionProgress | None:
        if thread_id != self.claim.thread_id:
            return await super().load_progress(thread_id)
        if self.finished is not None:
            return self.finished
        if self.committed:
            progress = await sync_to_async(_claimed_progress)(self.claim.session_id, fault=True)
        else:  # a session start: no statement (it was one on the worker's database thread)
            progress = self.claim.progress
        return SessionProgress.model_validate(progress) if progress else None

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        record, self.read_thread = self.read_thread, None
        if record is not None and thread_id == record.id:
            return record
        return await super().get_thread(thread_id)

    async def list_messages(self, thread_id: str, query: MessageQuery) -> MessagePage:
        if thread_id != self.claim.thread_id:
            return await super().list_messages(thread_id, query)
        # The claimed row holds the thread (a foreign key): an empty history needs no
        # statement to tell "no messages yet" from "no such thread".
        return await self.list_known_messages(thread_id, query)


# A fixed statement: every session start runs it on its worker's one database thread.
_PROGRESS_SQL = f"SELECT progress FROM {ThreadSession._meta.db_table} WHERE id = %s"


def _claimed_progress(session_id: str, *, fault: bool = False) -> dict[str, Any] | None:
    if fault:
        faults.hit("load_progress")
    row = row_by_uuid(_PROGRESS_SQL, session_id)
    progress = db_json(row[0]) if row else None
    return progress or None  # type: ignore[no-any-return]


# --- supervision ------------------------------------------------------------------------------


@dataclass
class Entry:
    claim: Claim
    # The job running the claim: once it ended, nothing may keep the session's heartbeat.
    job: asyncio.Task[Any] | None = None
    task: asyncio.Task[Any] | None = None
    reason: str | None = None  # "stop" or "lost": why the supervisor cancelled the task
    watch_stop: bool = True


@dataclass
class Supervisor:
    """Heartbeats and stop detection for every session running on one event loop."""

    entries: dict[str, Entry] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None
    _last_beat: float = 0.0
    _failing: bool = False

    def add(self, claim: Claim) -> Entry:
        entry = Entry(claim, job=asyncio.current_task())
        self.entries[claim.session_id] = entry
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return entry

    def remove(self, claim: Claim) -> None:
        self.entries.pop(claim.session_id, None)

    async def _run(self) -> None:
        poll = settings.STUDIO_STOP_POLL_MS / 1000
        while self.entries:
            await asyncio.sleep(poll)
            try:
                await self._tick()
                self._failing = False
            except Exception as exc:  # the database hiccuped: try again next tick
                # The traceback once per outage, not every poll.
                logger.warning(
                    "session supervisor tick failed: %s", exc, exc_info=not self._failing
                )
                self._failing = True
                await sync_to_async(drop_broken_connections)()

    async def _tick(self) -> None:
        for e in list(self.entries.values()):
            if e.job is not None and e.job.done():
                # A heartbeat for a session whose job is gone would hide it from the sweep
                # for ever; without it the session goes stale and is resumed.
                logger.error("session %s: its job ended without releasing it", e.claim.session_id)
                self.entries.pop(e.claim.session_id, None)
        entries = list(self.entries.values())
        watched = [e.claim.thread_id for e in entries if e.watch_stop and e.task]
        for thread_id in await sync_to_async(sessions.stopped_threads)(watched):
            for e in entries:
                if e.claim.thread_id == thread_id and e.watch_stop and e.task:
                    e.watch_stop, e.reason = False, "stop"
                    e.task.cancel()
        if time.monotonic() - self._last_beat < settings.STUDIO_SESSION_HEARTBEAT_SECONDS:
            return
        self._last_beat = time.monotonic()
        by_owner: dict[str, list[str]] = {}
        for e in entries:
            by_owner.setdefault(e.claim.owner, []).append(e.claim.session_id)
        for owner, ids in by_owner.items():
            for lost in await sync_to_async(sessions.sessions_heartbeat)(ids, owner):
                entry = self.entries.get(lost)
                if entry is not None and entry.task is not None:
                    entry.reason = "lost"
                    entry.task.cancel()


_supervisors: dict[asyncio.AbstractEventLoop, Supervisor] = {}
_clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}


def supervisor() -> Supervisor:
    loop = asyncio.get_running_loop()
    if loop not in _supervisors:
        _supervisors[loop] = Supervisor()
    return _supervisors[loop]


def http_client() -> httpx.AsyncClient:
    """One HTTP client per loop for the provider adapters (connection reuse)."""
    loop = asyncio.get_running_loop()
    if loop not in _clients:
        # Base URLs are users' input: the egress policy checks every address.
        _clients[loop] = egress.client(timeout=httpx.Timeout(120.0, connect=10.0))
    return _clients[loop]


# --- one session ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resume:
    """The claimed session is unfinished: the engine resumes it."""


@dataclass(frozen=True)
class Start:
    """A new session: on ``message`` (the thread's first queued one), or, without one, on
    ``side`` (a continue)."""

    message: NewMessage | None = None
    side: str | None = None
    thread: ThreadRecord | None = None  # the thread's record, read while planning


@dataclass(frozen=True)
class Park:
    """The thread is stopped: nothing runs, the session ends as aborted by the user."""


@dataclass(frozen=True)
class Finished:
    """Nothing to run: the session finished (a worker died after its last commit), or its
    message was cancelled before it ran."""


# What to do with a claimed session: one type per kind.
Plan = Resume | Start | Park | Finished


def plan_session(claim: Claim) -> Plan:
    """Decide how the claimed session runs."""
    faults.hit("plan")
    progress = claim.progress
    if progress:
        return Finished() if progress.get("finished") else Resume()
    read = sessions.session_start_read(claim.thread_id)
    first = read.head
    if read.park:
        return Park()
    if first is None:
        if claim.root_message_id is not None:
            return Finished()  # its message was cancelled before it ran
        return Start(side=claim.side or "a", thread=read.thread)
    metadata = {k: v for k, v in first.metadata.items() if k != RESUME_MARK}
    message = NewMessage(
        content=first.content,
        role=first.role,  # type: ignore[arg-type]
        id=first.id,
        attachments=first.attachments,
        silent=first.silent,
        metadata=metadata,
    )
    return Start(message=message, thread=read.thread)


async def _supervised(entry: Entry, coro: Any) -> SessionResult | None:
    """Run ``coro`` as the entry's task; ``None`` when the supervisor cancelled it for a stop."""
    entry.task = asyncio.get_running_loop().create_task(coro)
    try:
        return await entry.task  # type: ignore[no-any-return]
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if entry.reason is None or (current is not None and current.cancelling()):
            raise  # we are being cancelled ourselves (shutdown): let it propagate
        if entry.reason == "lost":
            raise SessionLost(entry.claim.session_id) from None
        return None
    finally:
        entry.task = None


async def _run_engine(
    entry: Entry, engine: Engine, store: ClaimedStore, plan: Start | Resume
) -> tuple[str, str]:
    """Run the engine for a start/resume plan; returns the session's stop reason and detail."""
    thread_id = entry.claim.thread_id
    if isinstance(plan, Start):
        side = plan.side if plan.message is None else None
        coro = engine.run_session(thread_id, message=plan.message, side=side)  # type: ignore[arg-type]
    else:
        coro = engine.run_session(thread_id)
    result = await _supervised(entry, coro)
    if result is not None:
        return result.stop_reason, result.detail or ""
    # Stopped mid-flight (the request in flight was aborted). Before the session's first
    # commit there is nothing to record; after it, resume once: the engine sees the stop
    # flag and records the end of the session itself.
    if not store.started and not await sync_to_async(_claimed_progress)(entry.claim.session_id):
        return "aborted_by_user", ""
    result = await _supervised(entry, engine.run_session(thread_id))
    if result is None:
        return "aborted_by_user", ""
    return result.stop_reason, result.detail or ""


async def run_claim(claim: Claim, slot: StartSlot | None = None) -> tuple[str, str]:
    """Run one claimed session to its end; returns the status to release it with, and for a
    failed session why (``_failure_reason``).

    Everything after the claim is inside the ``try``: whatever fails, the session leaves the
    supervisor (no heartbeat for a session nobody runs) and the caller releases or hands
    back the claim. ``slot`` (the start gate's) is given up at the first LLM request.
    """
    sink = LiveSink(on_request=slot.release if slot is not None else None)
    entry = supervisor().add(claim)
    try:
        store = ClaimedStore(claim)
        engine = build_engine(sink=sink, store=store, http=http_client())
        await _announce_claim(claim)
        plan = await sync_to_async(plan_session)(claim)
        store.read_thread = plan.thread if isinstance(plan, Start) else None
        detail = ""
        if isinstance(plan, Finished):
            reason = str(claim.progress.get("stop_reason") or "")
            detail = str(claim.progress.get("stop_detail") or "")
            # The worker died after the session's last commit: a child's end may be unsettled.
            await engine.subagents.recover(claim.thread_id)
        elif isinstance(plan, Park):
            reason = "aborted_by_user"
        else:
            if tracing.enabled():
                await _trace_versions(store)
            reason, detail = await _run_engine(entry, engine, store, plan)
        if reason == "aborted_by_user":
            await sink.flush()
            frames = await sync_to_async(_stop_cleanup)(claim, sink)
            await asend_thread_frames(claim.thread_id, frames)
        status = STATUS_BY_REASON.get(reason, ThreadSession.Status.COMPLETED)
        if status != ThreadSession.Status.FAILED:
            return status, ""
        return status, await _failure_reason(claim.thread_id, detail)
    except (DefinitionNotFound, ThreadTerminated, LookupError) as exc:
        logger.warning("session %s failed: %s", claim.session_id, exc, exc_info=True)
        await _fail(claim, str(exc))
        return ThreadSession.Status.FAILED, await _failure_reason(claim.thread_id, str(exc))
    finally:
        supervisor().remove(claim)
        await sink.flush()


async def _failure_reason(thread_id: str, detail: str) -> str:
    """Why a session failed, for its row and its ``session.failed`` webhook: the engine's
    detail (a failed model request's ``code: message``), with the thread's secrets redacted
    as the thread's own texts are (a vendor's error may quote the key it refused)."""
    if not detail:
        return ""
    return str(await sync_to_async(redact_for_thread)(thread_id, detail))


def _stop_cleanup(claim: Claim, sink: LiveSink) -> list[dict[str, Any]]:
    faults.hit("stop_cleanup")
    return sessions.stop_cleanup(claim.thread_id, key=claim.session_id, streamed=sink)


async def _fail(claim: Claim, detail: str) -> None:
    frames = await sync_to_async(sessions.failure_message)(claim.thread_id, detail)
    await asend_thread_frames(claim.thread_id, frames)
    # A subagent child's parent learns of it (once per session, see docs/subagents.md): the
    # child's real result when the session finished before the error, else a failure.
    progress = await sync_to_async(_claimed_progress)(claim.session_id)
    sink = LiveSink()
    engine = build_engine(sink=sink, store=DjangoStore())
    try:
        if progress and progress.get("finished"):
            await engine.subagents.recover(claim.thread_id)
        else:
            await engine.subagents.crashed(claim.thread_id, detail, claim.session_id)
    finally:
        await sink.flush()


def _thread_activity(thread_id: str) -> dict[str, Any] | None:
    faults.hit("announce")
    return thread_activity(thread_id)


async def _announce_activity(thread_id: str) -> None:
    frame = await sync_to_async(_thread_activity)(thread_id)
    if frame is not None:
        await _send_activity(frame)


async def _send_activity(frame: dict[str, Any]) -> None:
    owner = frame.pop("owner_id")  # chooses the owner's group; not sent
    await asend_registry(frame, owner)


async def _announce_claim(claim: Claim) -> None:
    """The start's announcement, from what the claiming statement read of the thread: the
    session it claimed runs, so the thread is executing."""
    if claim.thread_active_at is None:  # a claim that did not read the thread
        await _announce_activity(claim.thread_id)
        return
    await _send_activity(
        activity_frame(
            claim.thread_id, claim.thread_owner_id, claim.thread_active_at, executing=True
        )
    )


async def run_session_job(
    session_id: str, owner: str = OWNER, trace_carrier: dict[str, str] | None = None
) -> None:
    """Claim a session and run it, then the next ones while queued messages remain.

    Safe to call any number of times for the same id: only one call wins the claim.
    Every way out after a claim releases it or hands it back (``_hand_back``): a database
    connection error is retried here a few times, then left to the sweep. The first start
    (claim to first request) waits for a place in the loop's start gate. ``trace_carrier``
    (W3C headers) continues the trace of whoever started it (the post's request).
    """
    with tracing.attached(trace_carrier):
        await _run_session_job(session_id, owner)


async def _run_session_job(session_id: str, owner: str) -> None:
    slot = await start_gate().enter()
    try:
        attempts = iter(RETRY_DELAYS)
        claim = await retrying(attempts, "claim", _claim, session_id, owner)
        while claim is not None:
            try:
                status, error = await run_claim(claim, slot)
            except SessionLost:
                logger.warning("session %s was taken over by another worker", claim.session_id)
                return
            except CONNECTION_ERRORS as exc:
                logger.warning(
                    "session %s: database connection failed (%s); handing the claim back",
                    claim.session_id,
                    exc,
                )
                claim = await _hand_back(attempts, claim)
                continue
            except Exception as exc:
                logger.exception("session %s crashed", claim.session_id)
                status, error = ThreadSession.Status.FAILED, f"{type(exc).__name__}: {exc}"
                try:
                    await _fail(claim, type(exc).__name__)
                except CONNECTION_ERRORS:
                    logger.warning("session %s: could not store its failure", claim.session_id)
                    await sync_to_async(drop_broken_connections)()
            released = claim
            # The next queued message of this thread runs without waiting for a place: its
            # claim comes with the release, and a claimed row waiting in the gate would
            # have no heartbeat.
            slot.release()
            ended = await retrying(
                attempts, "release", sessions.session_end, claim, status=status, error=error
            )
            claim = ended.next
            # Webhook events (docs/automation.md): recorded now, sent by a task after commit.
            # The release read whether any subscription is active (most instances have none).
            if ended.webhooks is not False:
                await sync_to_async(webhook_runner.session_ended)(
                    released.thread_id,
                    released.session_id,
                    status,
                    error,
                    known_active=ended.webhooks is True,
                )
            if claim is None:
                try:
                    if ended.activity is not None:  # read in the release's transaction
                        await _send_activity(dict(ended.activity))
                    else:
                        await _announce_activity(released.thread_id)
                except CONNECTION_ERRORS:  # only a live notification: nothing to retry
                    # Whatever runs next on the database thread reconnects.
                    await sync_to_async(drop_broken_connections)()
    finally:
        slot.release()


async def _trace_versions(store: ClaimedStore) -> None:
    """Name the definition versions the session runs on, on its span (read now, as the
    engine would a moment later: the pins are read once either way)."""
    pins = await store.session_pins()
    if pins is None:
        return
    named = [f"{kind}/{name}={n}" for kind, got in pins.versions.items() for name, n in got.items()]
    named += [f"{key}=draft" for key in pins.drafts]
    tracing.set_session_attributes({tracing.VERSIONS: sorted(named)})


def _claim(session_id: str, owner: str) -> Claim | None:
    # One hop to the database thread: a connection an earlier job broke is closed first.
    close_failed_connections()
    return sessions.session_claim(session_id, owner)


async def _hand_back(attempts: Iterator[float], claim: Claim) -> Claim | None:
    """Hand the claim back (heartbeat marked stale), then take it again; ``None`` when another
    worker took it or the retries ran out (the sweep resumes it: nothing beats it any more)."""
    await sync_to_async(drop_broken_connections)()
    if not await retrying(attempts, "hand back", sessions.session_hand_back, claim):
        return None
    delay = next(attempts, None)
    if delay is None:
        return None
    await asyncio.sleep(delay)
    return await retrying(  # type: ignore[no-any-return]
        attempts, "claim", sessions.session_claim, claim.session_id, claim.owner
    )
