"""Message writes: post (queue, broadcast a provisional ``pending`` row, request a session),
edit and delete.

A posted message is stored as a ``QueuedMessage`` first and becomes a ``Message``
(same id) when a session takes it: as the session's first message, or drained
before the running session's next step. Either way it is never dropped and the
queue keeps posting order.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents_app import wire
from agents_app.base.errors import Conflict, Invalid, Locked, NotFound
from agents_app.broadcast.events import send_thread_and_registry, send_thread_frames
from agents_app.db.raw_sql import datetime_param, db_uuid, insert_row, prepared_cursor
from agents_app.models import Message, QueuedMessage, Thread, ThreadFile
from agents_app.models.agents import MidRunMessages
from agents_app.selectors import message_in_thread, queued_in_thread
from agents_app.services.access import limits
from agents_app.services.env.redaction import Redactor, redact_for_thread, thread_redactor
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.threads.changes import preview_of
from agents_app.services.threads.files import attachment_write, client_thumbnail, file_delete
from agents_app.services.threads.idempotency import (
    Answer,
    IdempotencyRequest,
    idempotent_record,
    idempotent_replay,
)
from runtime.store.events import event

CONTENT_MAX = 1_000_000
ROLES = ("user", "assistant", "system")


@dataclass
class NewAttachment:
    name: str
    mime_type: str
    data: str  # base64
    width: int | None = None
    height: int | None = None
    thumbnail: str | None = None  # base64 or a data: URL (the reference client sends one)


def _store_attachments(thread: Thread, items: list[NewAttachment]) -> list[dict[str, Any]]:
    refs = []
    for index, item in enumerate(items):
        try:
            data = base64.b64decode(item.data, validate=True)
        except (binascii.Error, ValueError):
            raise Invalid(f"Attachment {item.name!r}: data is not valid base64") from None
        thumbnail = (
            client_thumbnail(item.thumbnail, f"attachments.{index}.thumbnail")
            if item.thumbnail
            else None
        )
        # Downsampled like the reference (thread_files.attachment_write, docs/files.md).
        row = attachment_write(
            thread,
            item.name,
            data,
            item.mime_type,
            width=item.width,
            height=item.height,
            thumbnail=thumbnail,
        )
        ref = wire.attachment_ref(row)
        ref["name"] = item.name
        refs.append(ref)
    return refs


@dataclass(frozen=True)
class Posted(Answer):
    """The answer to a post: the first one's, or the stored one for a repeated key."""

    @property
    def message_id(self) -> str:
        return str(self.response["messageId"])


@transaction.atomic
def message_post(
    *,
    thread: Thread,
    role: str,
    content: str,
    attachments: list[NewAttachment] | None = None,
    silent: bool = False,
    idempotency: IdempotencyRequest | None = None,
    redactor: Redactor | None = None,
) -> Posted:
    """Queue a message and make sure a session will take it (now, or after the running one).

    With ``idempotency``, a key seen before on this thread returns the first answer and
    writes nothing (``Unprocessable`` if it came with another body). ``redactor``: the
    thread's, when the caller loaded it already (the API's response redaction shares it).
    """
    _check_post(role, content, attachments)
    # Stored (and previewed, and broadcast) redacted like the engine's own writes: a secret
    # the user typed is never kept in clear, not even while the message waits in the queue.
    redactor = thread_redactor(str(thread.pk)) if redactor is None else redactor
    content = redactor.text(content)
    attachments = [replace(a, name=redactor.text(a.name)) for a in attachments or []]
    read = sessions.lock_for_post(thread.pk)  # the lock also serializes posts with one key
    locked = read.thread
    if idempotency is not None:
        replay = idempotent_replay(idempotency, thread=locked)
        if replay is not None:
            return Posted(replay.status_code, replay.response, replayed=True)
    if locked.terminated_at is not None:
        raise Locked(f"Thread is terminated (terminated_at={wire.micros(locked.terminated_at)})")
    idle = not read.state.active
    if idle:
        limits.budget_check(locked, limits=read.budgets)  # an idle thread's post starts one
    queued = QueuedMessage(
        thread=locked,
        role=role,
        content=content,
        attachments=_store_attachments(locked, attachments) or None,
        silent=silent,
        metadata=_arrival_metadata(read, role=role, idle=idle),
    )
    insert_row(queued)
    _touch(locked, role, content, silent)
    if idle:
        sessions.session_request(
            locked,
            side="b" if role == "assistant" else "a",
            root_message_id=queued.pk,
            state=read.state,
        )
    _announce_post(locked, queued)
    posted = Posted(202, wire.message_queued(queued.pk))
    if idempotency is not None:
        idempotent_record(
            idempotency,
            thread=locked,
            operation="message_post",
            status_code=posted.status_code,
            response=posted.response,
        )
    return posted


def _check_post(role: str, content: str, attachments: list[NewAttachment] | None) -> None:
    if role not in ROLES:
        raise Invalid("role must be one of: user, assistant, system")
    if not content.strip() and not attachments:
        raise Invalid("Message content or attachments required")
    if len(content) > CONTENT_MAX:
        raise Invalid(f"Message content is longer than {CONTENT_MAX} characters")


def _arrival_metadata(read: sessions.PostRead, *, role: str, idle: bool) -> dict[str, Any]:
    """What a post carries into the queue, by the agent's mid-run policy while a session runs:
    queued for the running session, refused, kept for a session of its own, or interrupting
    the running one (which is asked to stop here, at its next safe point)."""
    locked = read.thread
    metadata: dict[str, Any] = {}
    policy = MidRunMessages.QUEUE if idle else read.mid_run
    if policy == MidRunMessages.REJECT:
        raise Conflict(REJECT_TEXT)
    if policy != MidRunMessages.QUEUE:
        # Not drained into the running session: the head of a session of its own.
        metadata[MID_RUN_MARK] = str(policy)
    if policy == MidRunMessages.INTERRUPT:
        sessions.thread_stop(thread=locked)  # the session stops at its next safe point
        locked.stopped = True
    if (role == "user" and (idle or locked.stopped)) or policy == MidRunMessages.INTERRUPT:
        # A user message resumes a stopped thread (the reference clears the flag for it).
        metadata[wire.RESUME_MARK] = wire.RESUME_VALUE
    return metadata


def _announce_post(locked: Thread, queued: QueuedMessage) -> None:
    """After the commit: the provisional row to the thread's sockets, its activity to lists."""
    frame = wire.message_frame(wire.queued_wire(queued))
    activity = {
        "type": "thread_activity",
        "threadId": str(locked.pk),
        "last_activity_at": wire.seconds(locked.last_activity_at),
        "executing": True,
    }
    if queued.role == "user" and not queued.silent:
        activity["last_message_preview"] = locked.last_message_preview
        activity["last_message_at"] = wire.seconds(locked.last_message_at)
    transaction.on_commit(
        lambda: send_thread_and_registry(str(locked.pk), [frame], activity, locked.owner_id)
    )


# Read by the person chatting (the chat shows a refusal's text as it is): what happened and
# what to do, in their words; the policy's name is the studio's business (docs/automation.md).
REJECT_TEXT = (
    "The agent is still answering, and this agent takes no new message until it has "
    "finished. Send your message again when its reply is complete."
)
# Metadata of a queued message that waits for a session of its own (``enqueue`` or
# ``interrupt``); the running session's drain leaves it (bridge.store._drain_queue).
MID_RUN_MARK = "mid_run"


# Fixed statements: every post runs one (issue #21; no signal receivers watch threads).
_TOUCH_SQL = f"UPDATE {Thread._meta.db_table} SET last_activity_at = %s WHERE id = %s"
_TOUCH_WITH_MESSAGE_SQL = (
    f"UPDATE {Thread._meta.db_table} SET last_activity_at = %s, last_message_at = %s, "
    "last_message_preview = %s WHERE id = %s"
)


def _touch(thread: Thread, role: str, content: str, silent: bool) -> None:
    """The thread's activity stamp (and, for a user's visible message, its preview), on the
    row and on ``thread``."""
    now = timezone.now()
    thread.last_activity_at = now
    stamp, pk = datetime_param(now), db_uuid(thread.pk)
    with prepared_cursor() as cursor:
        if role == "user" and not silent and content.strip():
            thread.last_message_at, thread.last_message_preview = now, preview_of(content)
            cursor.execute(_TOUCH_WITH_MESSAGE_SQL, [stamp, stamp, thread.last_message_preview, pk])
        else:
            cursor.execute(_TOUCH_SQL, [stamp, pk])


@transaction.atomic
def message_update(*, thread: Thread, message_id: str, content: str) -> None:
    """Replace a message's content (stored or still queued) and tell the listeners."""
    if len(content) > CONTENT_MAX:
        raise Invalid(f"Message content is longer than {CONTENT_MAX} characters")
    content = redact_for_thread(str(thread.pk), content)
    row = message_in_thread(thread, message_id)
    if row is not None:
        row.content = content
        row.save(update_fields=["content"])
        frame = wire.message_frame(wire.message_wire(row))
    else:
        queued = queued_in_thread(thread, message_id)
        if queued is None:
            raise NotFound("Message not found")
        queued.content = content
        queued.save(update_fields=["content"])
        frame = wire.message_frame(wire.queued_wire(queued))
    transaction.on_commit(lambda: send_thread_frames(str(thread.pk), [frame]))


@transaction.atomic
def message_delete(*, thread: Thread, message_id: str) -> None:
    """Cancel a queued message, or delete a stored one with its tool results and attachments."""
    queued = queued_in_thread(thread, message_id)
    if queued is not None:
        queued.delete()
    else:
        row = message_in_thread(thread, message_id)
        if row is None:
            raise NotFound("Message not found")
        call_ids = [c.get("id") for c in row.tool_calls or [] if isinstance(c, dict)]
        if call_ids:
            Message.objects.filter(thread=thread, tool_call_id__in=call_ids).delete()
        paths = [a.get("path") for a in row.attachments or [] if isinstance(a, dict)]
        row.delete()
        for path in paths:
            if (
                isinstance(path, str)
                and ThreadFile.objects.filter(thread=thread, path=path).exists()
            ):
                file_delete(thread, path)
    frame = event("message_deleted", {"id": message_id})
    transaction.on_commit(lambda: send_thread_frames(str(thread.pk), [frame]))
