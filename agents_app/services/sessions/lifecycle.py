"""Sessions in the database: request, claim, heartbeat, release, sweep; stop and continue.

Ownership of a session lives in its ``ThreadSession`` row, never in the broker:

- a session is *requested* by creating a ``queued`` row; the partial unique
  constraint ``one_active_session_per_thread`` allows one queued-or-running row
  per thread, so a request while one is active just leaves the work queued;
- a worker *claims* the row with one conditional UPDATE (``queued`` → ``running``,
  or a ``running`` row whose heartbeat is older than the stale limit) that must
  change exactly one row; every delivery of a task may be a duplicate, and a
  duplicate finds the row owned and exits;
- the owner refreshes ``heartbeat_at``; every commit of the engine checks the
  owner (``agents_app.orchestration.runner.ClaimedStore``), so a worker that lost the row
  (declared dead, taken over) cannot write any more;
- the periodic sweep re-dispatches rows whose heartbeat stopped (the new owner
  resumes from the stored progress) and queued rows whose task was lost.

Writers that decide whether a session must start (posting, continue, stop,
release) lock the thread row first (``SELECT … FOR UPDATE``), which serializes
them per thread.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from agents_app import wire
from agents_app.base import faults
from agents_app.base.dispatch import session_should_run
from agents_app.base.errors import Locked
from agents_app.broadcast.events import send_thread_frames
from agents_app.db.composed import Part, Select
from agents_app.db.raw_sql import (
    datetime_param,
    db_datetime,
    db_json,
    db_uuid,
    insert_row,
    model_from_row,
    model_part,
    model_select,
    prepared_cursor,
    row_by_uuid,
    text_uuid,
)
from agents_app.db.thread_records import record_of, record_part
from agents_app.models import (
    Agent,
    Log,
    Message,
    QueuedMessage,
    Thread,
    ThreadSession,
    WebhookSubscription,
)
from agents_app.models.timestamps import now_us
from agents_app.selectors import ACTIVE_SESSION, STOPPED_LOG_TYPE, activity_frame
from agents_app.services.access.limits import (
    Budgets,
    budget_check,
    budget_part,
    budgets_from,
)
from agents_app.services.sessions import tool_waits
from runtime.store.events import telemetry
from runtime.store.protocol import ThreadRecord

STOP_TEXT = "Execution stopped by user"
FAILED_TEXT = "The agent run failed unexpectedly: {detail}"
_STOP_NAMESPACE = uuid.UUID("6f1c1a52-8a3e-4d0e-9a55-6f0b3f3c9d21")


def owner_id() -> str:
    """A process-unique owner name: host, pid and a random suffix (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def stale_after() -> timedelta:
    return timedelta(seconds=settings.STUDIO_SESSION_STALE_SECONDS)


# Fixed statements: every post runs both under its thread's lock, and compiling the ORM's
# versions cost more of the web process's time than PostgreSQL's work (issue #21).
_THREAD_ROW_SQL = f"{model_select(Thread, 't')} WHERE t.id = %s"
_OPEN_SESSIONS = (*ACTIVE_SESSION, ThreadSession.Status.PARKED)
_OPEN_STATUSES_SQL = (
    f"SELECT DISTINCT status FROM {ThreadSession._meta.db_table} WHERE thread_id = %s "
    f"AND status IN ({', '.join(['%s'] * len(_OPEN_SESSIONS))})"
)


def lock_thread(thread_id: Any) -> Thread:
    """The thread row, locked until the end of the transaction (serializes session decisions).

    ``Thread.DoesNotExist`` for no such thread (or a malformed id), as ``QuerySet.get``."""
    # SQLite has no row locks: its writes take the whole database (Django drops the clause).
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    row = row_by_uuid(_THREAD_ROW_SQL + lock, thread_id)
    if row is None:
        raise Thread.DoesNotExist(f"Thread not found: {thread_id}")
    return model_from_row(Thread, row)


@dataclass(frozen=True)
class SessionState:
    """Which sessions a thread has open: an active one (queued or running), a parked one."""

    active: bool
    parked: bool


def session_state(thread: Thread) -> SessionState:
    """The thread's open sessions, in one query (hold the thread lock for it to stay true)."""
    with connection.cursor() as cursor:
        cursor.execute(_OPEN_STATUSES_SQL, [db_uuid(thread.pk), *_OPEN_SESSIONS])
        statuses = {status for (status,) in cursor.fetchall()}
    return SessionState(
        active=bool(statuses & set(ACTIVE_SESSION)),
        parked=ThreadSession.Status.PARKED in statuses,
    )


@dataclass(frozen=True)
class PostRead:
    """What a post decides on, read under its thread's lock."""

    thread: Thread
    state: SessionState
    budgets: Budgets  # limits.budgets of the thread's owner and agent
    mid_run: str  # its agent's ``mid_run_messages``: what a post to a busy thread does


def _post_read() -> Select:
    active = ", ".join(f"'{s}'" for s in ACTIVE_SESSION)
    sessions = ThreadSession._meta.db_table
    opened = f"SELECT 1 FROM {sessions} s WHERE s.thread_id = t.id AND s.status"
    state = Part(
        (
            ("active", f"EXISTS ({opened} IN ({active}))"),
            ("parked", f"EXISTS ({opened} = '{ThreadSession.Status.PARKED}')"),
            (
                "mid_run",
                f"(SELECT a.mid_run_messages FROM {Agent._meta.db_table} a WHERE a.id = t.agent_id)",
            ),
        )
    )
    parts = {"thread": model_part(Thread, "t"), "state": state, "budgets": budget_part("t")}
    return Select(Thread._meta.db_table, "t", parts, "WHERE t.id = %s")


_POST_READ = _post_read()


def lock_for_post(thread_id: Any) -> PostRead:
    """``lock_thread``, ``session_state``, ``limits.budgets`` and the agent's mid-run policy in
    one statement: a post needs them under the lock, and each statement of its own was a round trip and a
    cursor of the web process's time (issue #39)."""
    # Only the thread's row is locked (the budgets' rows are outer-joined, and may be none).
    lock = " FOR UPDATE OF t" if connection.features.has_select_for_update_of else ""
    row = row_by_uuid(_POST_READ.sql + lock, thread_id)
    if row is None:
        raise Thread.DoesNotExist(f"Thread not found: {thread_id}")
    read = _POST_READ.read(row)
    state = read["state"]
    return PostRead(
        thread=model_from_row(Thread, _POST_READ.values(row, "thread")),
        state=SessionState(active=bool(state["active"]), parked=bool(state["parked"])),
        budgets=budgets_from(read["budgets"]),
        mid_run=state["mid_run"] or Agent._meta.get_field("mid_run_messages").default,
    )


def session_request(
    thread: Thread,
    *,
    side: str = "a",
    root_message_id: Any = None,
    state: SessionState | None = None,
) -> ThreadSession | None:
    """Request a session for ``thread`` unless one is active. Hold the thread lock.

    ``state``: the thread's ``session_state``, when the caller read it under the same lock.
    """
    state = session_state(thread) if state is None else state
    if state.active:
        return None
    if state.parked:
        return None  # queued work waits until the waiting tool call is decided
    row = ThreadSession(
        thread=thread,
        status=ThreadSession.Status.QUEUED,
        side=side,
        root_message_id=root_message_id,
    )
    insert_row(row)
    session_should_run(row.pk)
    return row


def parked_session(thread: Thread) -> ThreadSession | None:
    """The session parked on a waiting tool call, if any (at most one: see ``session_request``)."""
    return ThreadSession.objects.filter(thread=thread, status=ThreadSession.Status.PARKED).first()


def active_session(thread: Thread) -> ThreadSession | None:
    return ThreadSession.objects.filter(thread=thread, status__in=ACTIVE_SESSION).first()


# --- stop and continue -----------------------------------------------------------------


@transaction.atomic
def thread_stop(*, thread: Thread) -> None:
    """Set the stop flag. An idle thread is tidied now; a running session stops at its next
    safe point (its worker aborts the request in flight and tidies, see ``runner``)."""
    locked = lock_thread(thread.pk)
    locked.stopped = True
    locked.save(update_fields=["stopped"])
    # Messages queued before the stop no longer resume the thread: the stop is newer, and
    # a session still waiting for a worker must park them instead of running. A row another
    # transaction holds is being consumed (a worker's commit stores it as a message and
    # deletes it, then updates the thread): waiting for it while holding the thread's lock
    # was a deadlock, and the stop was the transaction PostgreSQL aborted. Such a row is
    # skipped: it is gone once that commit lands.
    marked = QueuedMessage.objects.select_for_update(skip_locked=True).filter(
        thread=locked, **{f"metadata__{wire.RESUME_MARK}": wire.RESUME_VALUE}
    )
    for row in marked:
        row.metadata.pop(wire.RESUME_MARK, None)
        row.save(update_fields=["metadata"])
    parked = parked_session(locked)
    if parked is not None:  # its waiting call is answered by the cleanup below
        progress = {**parked.progress, "finished": True, "open_step": None}
        progress.update(stop_reason="aborted_by_user", stop_detail=None)
        ThreadSession.objects.filter(pk=parked.pk, status=ThreadSession.Status.PARKED).update(
            status=ThreadSession.Status.STOPPED,
            ended_at=timezone.now(),
            stop_reason="aborted_by_user",
            progress=progress,
        )
    if active_session(locked) is None:
        frames = stop_cleanup(str(locked.pk), key=None)
        transaction.on_commit(lambda: send_thread_frames(str(locked.pk), frames))


@transaction.atomic
def thread_continue(*, thread: Thread, side: str) -> ThreadSession | None:
    """Clear the stop flag and run a session on ``side`` (parked queued messages go first)."""
    locked = lock_thread(thread.pk)
    if locked.terminated_at is not None:
        raise Locked(f"Thread is terminated (terminated_at={wire.micros(locked.terminated_at)})")
    if active_session(locked) is None:
        budget_check(locked)  # continuing an idle thread starts a new session
    locked.stopped = False
    locked.last_activity_at = timezone.now()
    locked.save(update_fields=["stopped", "last_activity_at"])
    return session_request(locked, side=side) or active_session(locked)


def _next_created_at(thread_id: str) -> int:
    last = Message.objects.filter(thread_id=thread_id).aggregate(m=Max("created_at"))["m"] or 0
    return max(now_us(), last + 1)


def _open_tool_calls(thread_id: str) -> list[tuple[Message, dict[str, Any]]]:
    """Top-level tool calls (newest 200 calling messages of the active path) that have no
    result row (an abandoned branch's calls are not answered into the active one)."""
    callers = list(
        Message.objects.filter(
            thread_id=thread_id, depth=0, abandoned=False, tool_calls__isnull=False
        ).order_by("-created_at")[:200]
    )
    ids = [c.get("id") for m in callers for c in (m.tool_calls or []) if isinstance(c, dict)]
    answered = set(
        Message.objects.filter(
            thread_id=thread_id, role=Message.Role.TOOL, tool_call_id__in=ids
        ).values_list("tool_call_id", flat=True)
    )
    return [
        (m, c)
        for m in reversed(callers)
        for c in (m.tool_calls or [])
        if isinstance(c, dict) and c.get("id") and c["id"] not in answered
    ]


@transaction.atomic
def stop_cleanup(
    thread_id: str, *, key: str | None, streamed: StreamedReplies | None = None
) -> list[dict[str, Any]]:
    """What a stop leaves behind, once: the replies the stop cut short kept as stopped (what
    had streamed of them stored as their text), other pending rows failed, open tool calls
    answered with an error, unfinished request logs closed, and the system message
    "Execution stopped by user".

    ``key`` (the session id) makes it idempotent per session; ``streamed`` is what the
    session's sink saw (``LiveSink.streamed``); returns the frames to send.
    """
    stop_id = uuid.uuid5(_STOP_NAMESPACE, key) if key else uuid.uuid4()
    if Message.objects.filter(pk=stop_id).exists():
        return []
    now = now_us()
    cause = _stop_cause(thread_id)
    changed: list[Message] = (
        _keep_stopped_replies(thread_id, streamed, now, cause) if streamed else []
    )
    for row in Message.objects.filter(
        thread_id=thread_id, status=Message.Status.PENDING, role=Message.Role.TOOL
    ).filter(metadata__has_key="tool_wait"):
        changed.append(tool_waits.answer_stopped(row, now))
    for row in Message.objects.filter(thread_id=thread_id, status=Message.Status.PENDING):
        row.status = Message.Status.FAILED
        row.response_completed_at = row.response_completed_at or now
        row.save(update_fields=["status", "response_completed_at"])
        changed.append(row)
    # A request a person stopped is no failure of the model's: no error, so no chart or
    # list counts it as one.
    Log.objects.filter(thread_id=thread_id, is_complete=False).update(
        is_complete=True, error="", error_type=STOPPED_LOG_TYPE, error_origin=""
    )
    created_at = _next_created_at(thread_id)
    for caller, call in _open_tool_calls(thread_id):
        function = call.get("function") or {}
        changed.append(
            Message.objects.create(
                thread_id=thread_id,
                role=Message.Role.TOOL,
                content=STOP_TEXT,
                name=function.get("name") if isinstance(function, dict) else None,
                tool_call_id=call["id"],
                tool_status=Message.ToolStatus.ERROR,
                status=Message.Status.COMPLETED,
                side=caller.side,
                created_at=created_at,
            )
        )
        created_at += 1
    changed.append(
        Message.objects.create(
            id=stop_id,
            thread_id=thread_id,
            role=Message.Role.SYSTEM,
            content=STOP_TEXT,
            status=Message.Status.COMPLETED,
            created_at=created_at,
            metadata=cause,
        )
    )
    frames = [wire.message_frame(wire.message_wire(m)) for m in changed]
    return [*frames, telemetry("stopped_by_user")]


class StreamedReplies(Protocol):
    """What a session's sink saw of its replies (``LiveSink``)."""

    opened: set[str]

    def text_of(self, message_id: str) -> str: ...


# Metadata of a message posted under the agent's ``interrupt`` policy while it waits in the
# queue (``services.threads.messages.MID_RUN_MARK``; that module imports this one).
_INTERRUPT_WAITS = {"metadata__mid_run": "interrupt"}


def _stop_cause(thread_id: str) -> dict[str, Any]:
    """The stopped rows' metadata: ``stopped_by_user``, and ``interrupted_by_message`` when
    the stop came from a message posted under the ``interrupt`` policy (it waits in the queue
    until this session is released), so the chat says a new message cut the reply short
    rather than that the person pressed Stop."""
    cause: dict[str, Any] = {"stopped_by_user": True}
    if QueuedMessage.objects.filter(thread_id=thread_id, **_INTERRUPT_WAITS).exists():
        cause["interrupted_by_message"] = True
    return cause


def _keep_stopped_replies(
    thread_id: str, streamed: StreamedReplies, now: int, cause: dict[str, Any]
) -> list[Message]:
    """The replies this session opened and the stop cut short (still pending, or failed by
    the engine's tidy-up just before): kept with what streamed of them, marked stopped.

    They are completed (later requests include them, as a person saw them); one with no
    text yet stays failed. Their request logs lose the error the tidy-up gave them."""
    rows = Message.objects.filter(
        thread_id=thread_id,
        pk__in=list(streamed.opened),
        role=Message.Role.ASSISTANT,
        status__in=(Message.Status.PENDING, Message.Status.FAILED),
    ).exclude(metadata__has_key="error")
    kept: list[Message] = []
    for row in rows:
        text = streamed.text_of(str(row.pk))
        if not text and not row.content:
            continue  # nothing to keep: it stays failed, as before
        row.content = row.content or text
        row.status = Message.Status.COMPLETED
        row.response_completed_at = row.response_completed_at or now
        row.metadata = {**(row.metadata or {}), **cause}
        row.save(update_fields=["content", "status", "response_completed_at", "metadata"])
        kept.append(row)
    logs = [row.log_id for row in kept if row.log_id]
    if logs:
        Log.objects.filter(thread_id=thread_id, pk__in=logs, error_type="interrupted").update(
            error="", error_type=STOPPED_LOG_TYPE, error_origin=""
        )
    return kept


def failure_message(thread_id: str, detail: str) -> list[dict[str, Any]]:
    """Store the failed assistant message that explains a crashed run; returns its frame."""
    if not Thread.objects.filter(pk=thread_id).exists():
        return []
    row = Message.objects.create(
        thread_id=thread_id,
        role=Message.Role.ASSISTANT,
        content=FAILED_TEXT.format(detail=detail),
        status=Message.Status.FAILED,
        side="a",
        created_at=_next_created_at(thread_id),
    )
    return [wire.message_frame(wire.message_wire(row))]


# --- claiming ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A session row this process owns right now."""

    session_id: str
    thread_id: str
    owner: str
    side: str
    root_message_id: str | None
    progress: dict[str, Any]
    # The thread as the claim read it, for the session's ``thread_activity`` announcement
    # (``None``: not read, the announcement reads it).
    thread_owner_id: str | None = None
    thread_active_at: datetime | None = None


def _claim_of(row: ThreadSession, thread: Thread) -> Claim:
    return Claim(
        session_id=str(row.pk),
        thread_id=str(row.thread_id),
        owner=row.owner,
        side=row.side,
        root_message_id=str(row.root_message_id) if row.root_message_id else None,
        progress=dict(row.progress or {}),
        thread_owner_id=str(thread.owner_id) if thread.owner_id else None,
        thread_active_at=thread.last_activity_at,
    )


# A fixed statement: every session start runs it on its worker's one database thread. It
# also reads what the start's ``thread_activity`` announcement says of the thread (its
# owner, its last activity), which was a statement of its own.
_SESSIONS, _THREADS = ThreadSession._meta.db_table, Thread._meta.db_table
_CLAIM_SQL = (
    f"UPDATE {_SESSIONS} SET status = %s, owner = %s, heartbeat_at = %s, "
    "started_at = COALESCE(started_at, %s) "
    "WHERE id = %s AND (status = %s OR (status = %s AND heartbeat_at < %s)) "
    "RETURNING id, thread_id, side, root_message_id, progress, "
    f"(SELECT t.owner_id FROM {_THREADS} t WHERE t.id = {_SESSIONS}.thread_id), "
    f"(SELECT t.last_activity_at FROM {_THREADS} t WHERE t.id = {_SESSIONS}.thread_id)"
)


def session_claim(session_id: str, owner: str) -> Claim | None:
    """Take the session if it is queued or its owner stopped heartbeating; ``None`` otherwise.

    One conditional UPDATE that must change exactly one row: two workers racing for
    the same row (a duplicate delivery, a sweep and a redelivery) cannot both win. It
    reads the row back itself (``RETURNING``), so a claim is one statement and one round
    trip: a connection lost before it claims nothing, one lost after it left a row that
    nobody beats, which the sweep hands on once its heartbeat is stale.
    """
    try:
        pk = db_uuid(session_id)
    except ValueError:
        return None
    faults.hit("claim")
    now = timezone.now()
    when = datetime_param(now)
    running, queued = ThreadSession.Status.RUNNING, ThreadSession.Status.QUEUED
    stale = datetime_param(now - stale_after())
    with prepared_cursor() as cursor:
        cursor.execute(_CLAIM_SQL, [running, owner, when, when, pk, queued, running, stale])
        row = cursor.fetchone()
    if row is None:
        return None
    session, thread, side, root_message_id, progress, thread_owner, active_at = row
    return Claim(
        session_id=text_uuid(session) or "",
        thread_id=text_uuid(thread) or "",
        owner=owner,
        side=side,
        root_message_id=text_uuid(root_message_id),
        progress=dict(db_json(progress) or {}),
        thread_owner_id=str(thread_owner) if thread_owner is not None else None,
        thread_active_at=db_datetime(active_at) if active_at is not None else None,
    )


def session_hand_back(claim: Claim) -> bool:
    """Give up a claim this process cannot carry on (its database connection failed):
    the row stays ``running`` with a heartbeat already stale, so the next claim (this
    process retrying, or the sweep) takes it at once and resumes from the stored progress.
    ``False`` when the claim was no longer ours."""
    stale = timezone.now() - stale_after() - timedelta(seconds=1)
    return (
        ThreadSession.objects.filter(
            pk=claim.session_id, owner=claim.owner, status=ThreadSession.Status.RUNNING
        ).update(heartbeat_at=stale)
        == 1
    )


def sessions_heartbeat(session_ids: list[str], owner: str) -> set[str]:
    """Refresh the heartbeat of the sessions ``owner`` still holds; returns the ones it lost."""
    if not session_ids:
        return set()
    faults.hit("heartbeat")
    if connection.vendor == "postgresql":
        # One fixed statement for every session of the loop: the ORM's UPDATE and SELECT
        # quoted each of hundreds of ids twice, on the worker's one database thread.
        with connection.cursor() as cursor:
            cursor.execute(
                _heartbeat_sql(),
                [timezone.now(), session_ids, owner, ThreadSession.Status.RUNNING],
            )
            alive = {str(row[0]) for row in cursor.fetchall()}
        return set(session_ids) - alive
    mine = ThreadSession.objects.filter(
        pk__in=session_ids, owner=owner, status=ThreadSession.Status.RUNNING
    )
    mine.update(heartbeat_at=timezone.now())
    alive = {str(pk) for pk in mine.values_list("pk", flat=True)}
    return set(session_ids) - alive


def stopped_threads(thread_ids: list[str]) -> set[str]:
    """Which of ``thread_ids`` are stopped (the supervisor asks twice a second)."""
    if not thread_ids:
        return set()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_stopped_sql(), [thread_ids])
            return {str(row[0]) for row in cursor.fetchall()}
    rows = Thread.objects.filter(pk__in=thread_ids, stopped=True).values_list("pk", flat=True)
    return {str(pk) for pk in rows}


@functools.cache
def _heartbeat_sql() -> str:
    meta = ThreadSession._meta
    beat, owner = meta.get_field("heartbeat_at").column, meta.get_field("owner").column
    status = meta.get_field("status").column
    return (
        f'UPDATE "{meta.db_table}" SET "{beat}" = %s WHERE "{meta.pk.column}" = ANY(%s::uuid[]) '
        f'AND "{owner}" = %s AND "{status}" = %s RETURNING "{meta.pk.column}"'
    )


@functools.cache
def _stopped_sql() -> str:
    meta = Thread._meta
    return (
        f'SELECT "{meta.pk.column}" FROM "{meta.db_table}" '
        f'WHERE "{meta.get_field("stopped").column}" AND "{meta.pk.column}" = ANY(%s::uuid[])'
    )


def runnable_queue(thread: Thread) -> bool:
    """Queued messages that should run now: any, unless the thread is stopped; while stopped
    only a message that resumes it (a user message posted after the stop) does."""
    queued = QueuedMessage.objects.filter(thread=thread)
    if thread.stopped:
        queued = queued.filter(**{f"metadata__{wire.RESUME_MARK}": wire.RESUME_VALUE})
    return queued.exists()


@dataclass(frozen=True)
class QueueHead:
    """The oldest queued message of a thread: what a session starts with."""

    id: str
    role: str
    content: Any
    attachments: Any
    silent: bool
    metadata: dict[str, Any]


# A fixed statement: every session start runs it on its worker's one database thread. It
# reads the thread's engine record too, which the engine then does not read again.
_QUEUE_HEAD = Part(
    columns=tuple(
        (name, f"q.{name}")
        for name in ("id", "role", "content", "attachments", "silent", "metadata")
    ),
    joins=(
        f"LEFT JOIN {QueuedMessage._meta.db_table} q ON q.id = "
        f"(SELECT id FROM {QueuedMessage._meta.db_table} WHERE thread_id = t.id "
        "ORDER BY created_at LIMIT 1)",
    ),
)
_HEAD = Select(
    Thread._meta.db_table,
    "t",
    {"record": record_part("t"), "head": _QUEUE_HEAD},
    "WHERE t.id = %s",
)


def _queue_head(thread_id: str) -> tuple[ThreadRecord, QueueHead | None]:
    row = row_by_uuid(_HEAD.sql, thread_id)
    if row is None:
        raise LookupError(f"Thread not found: {thread_id}")
    read = _HEAD.read(row)
    record = record_of(read["record"])
    queued = read["head"]
    pk, role, content = queued["id"], queued["role"], queued["content"]
    attachments, silent, metadata = queued["attachments"], queued["silent"], queued["metadata"]
    if pk is None:
        return record, None
    head = QueueHead(
        id=text_uuid(pk) or "",
        role=role,
        content=content,
        attachments=db_json(attachments),
        silent=bool(silent),
        metadata=dict(db_json(metadata) or {}),
    )
    return record, head


@dataclass(frozen=True)
class StartRead:
    """What a claimed session starts from: whether it must park instead of running, the
    oldest queued message, and the thread's engine record as read with them (``None`` when
    it parks)."""

    park: bool
    head: QueueHead | None
    thread: ThreadRecord | None


def session_start_read(thread_id: str) -> StartRead:
    """What a claimed session starts from (``StartRead``).

    A thread that is not stopped costs one statement and no lock: a stop that lands after
    it is seen by the running session at its next safe point, as it would be after the
    lock. A stopped thread is decided under its lock: it parks unless a user message
    posted after the stop resumes it, which clears the stop.
    """
    record, head = _queue_head(thread_id)
    if not record.stopped:
        return StartRead(False, head, record)
    with transaction.atomic():
        thread = lock_thread(thread_id)
        if thread.stopped:
            if not runnable_queue(thread):
                return StartRead(True, None, None)
            thread.stopped = False
            thread.save(update_fields=["stopped"])
        record, head = _queue_head(thread_id)
        return StartRead(False, head, record)


# Fixed statements: every session ends through them on its worker's one database thread.
# Touching the thread first locks its row until the commit, as ``lock_thread`` would.
_RELEASE_TOUCH_SQL = (
    f"UPDATE {Thread._meta.db_table} SET last_activity_at = %s WHERE id = %s "
    "RETURNING owner_id, last_message_at"
)
_RELEASE_END_SQL = (
    f"UPDATE {ThreadSession._meta.db_table} SET status = %s, ended_at = %s, error = %s "
    "WHERE id = %s AND owner = %s"
)
# After the end, in its transaction: whether work is queued, and what the end's announcement
# and webhook events need (each was a statement of its own after the commit: issue #39).
_RELEASE_AFTER_SQL = (
    f"SELECT EXISTS (SELECT 1 FROM {QueuedMessage._meta.db_table} WHERE thread_id = %s), "
    f"EXISTS (SELECT 1 FROM {ThreadSession._meta.db_table} "
    "WHERE thread_id = %s AND status IN (%s, %s)), "
    f"EXISTS (SELECT 1 FROM {WebhookSubscription._meta.db_table} WHERE active)"
)


@dataclass(frozen=True)
class Released:
    """What a release leaves: the next session's claim when queued work remains, and, read
    in the release's own transaction, the end's ``thread_activity`` frame (``owner_id``
    included, for the sender) and whether any webhook subscription is active. ``None`` for
    either: not read here (a release that was not ours, a parked session), ask again."""

    next: Claim | None
    activity: dict[str, Any] | None = None
    webhooks: bool | None = None


@transaction.atomic
def session_end(claim: Claim, *, status: str, error: str = "") -> Released:
    """End the claimed session; when queued work remains, open the next session for the
    same owner and return its claim in ``next`` (``None`` when done, failed or no longer
    ours), with what the end's announcement and webhook events need."""
    now = timezone.now()
    when = datetime_param(now)
    try:
        thread_pk = db_uuid(claim.thread_id)
        session_pk = db_uuid(claim.session_id)
    except ValueError:
        return Released(None)
    with prepared_cursor() as cursor:
        cursor.execute(_RELEASE_TOUCH_SQL, [when, thread_pk])
        touched = cursor.fetchone()
        faults.hit("release")
        cursor.execute(_RELEASE_END_SQL, [status, when, error[:2000], session_pk, claim.owner])
        ended = cursor.rowcount
        if touched is None or ended != 1:
            return Released(None)
        if status == ThreadSession.Status.PARKED:
            queued = True  # decided below, by the parked session's approvals
            released = Released(None)
        else:
            cursor.execute(_RELEASE_AFTER_SQL, [thread_pk, thread_pk, *ACTIVE_SESSION])
            queued, executing, webhooks = (bool(v) for v in cursor.fetchone())
            activity = activity_frame(
                claim.thread_id, touched[0], now, executing, db_datetime(touched[1])
            )
            released = Released(None, activity, webhooks)
        if status == ThreadSession.Status.FAILED or not queued:
            return released  # the common end: nothing queued meanwhile
    thread = Thread.objects.get(pk=thread_pk)  # locked by the touch above
    if status == ThreadSession.Status.PARKED:
        # Decided between the engine's parking commit and this release: run on at once.
        tool_waits.resume_parked(thread)
        return released
    if not runnable_queue(thread):
        return released
    if active_session(thread) is not None:  # someone requested one meanwhile: it runs instead
        return released
    row = ThreadSession.objects.create(
        thread=thread,
        status=ThreadSession.Status.RUNNING,
        owner=claim.owner,
        heartbeat_at=now,
        started_at=now,
    )
    return Released(_claim_of(row, thread))


def sessions_sweep() -> list[str]:
    """Sessions to dispatch again: running ones whose heartbeat stopped, and queued ones whose
    task seems lost (not dispatched for a while)."""
    now = timezone.now()
    dead = ThreadSession.objects.filter(
        status=ThreadSession.Status.RUNNING, heartbeat_at__lt=now - stale_after()
    )
    redispatch = now - timedelta(seconds=settings.STUDIO_SESSION_REDISPATCH_SECONDS)
    # heartbeat_at of a queued row is the last time the sweep dispatched it.
    lost = ThreadSession.objects.filter(
        status=ThreadSession.Status.QUEUED, created_at__lt=redispatch
    )
    lost = lost.filter(Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=redispatch))
    lost_ids = list(lost.values_list("pk", flat=True))
    ThreadSession.objects.filter(pk__in=lost_ids, status=ThreadSession.Status.QUEUED).update(
        heartbeat_at=now
    )
    return [str(pk) for pk in dead.values_list("pk", flat=True)] + [str(pk) for pk in lost_ids]
