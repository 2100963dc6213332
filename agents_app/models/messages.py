from __future__ import annotations

import uuid

from django.db import models

from agents_app.models.logs import Log
from agents_app.models.threads import Thread
from agents_app.models.timestamps import now_us


class Message(models.Model):
    """A message row with the reference's fields (we own this schema: no SDK objects)."""

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    class Status(models.TextChoices):
        PENDING = "pending"
        COMPLETED = "completed"
        FAILED = "failed"

    class ToolStatus(models.TextChoices):
        SUCCESS = "success"
        ERROR = "error"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the unique (thread, created_at) constraint's index and
    # ``message_thread_toolcall`` both lead with the thread (one write fewer per message).
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(null=True, blank=True)
    name = models.CharField(max_length=200, blank=True, null=True)
    # Schema: list of {id, type:"function", function:{name, arguments}} (OpenAI shape).
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, null=True, blank=True)
    tool_status = models.CharField(max_length=8, choices=ToolStatus.choices, null=True, blank=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, null=True, blank=True, default=Status.COMPLETED
    )
    # Microseconds since the epoch (wire format); unique per thread so ordering is total.
    created_at = models.BigIntegerField(default=now_us)
    request_sent_at = models.BigIntegerField(null=True, blank=True)
    response_completed_at = models.BigIntegerField(null=True, blank=True)
    # No database constraint: a sub-prompt's messages are stored before the tool-result
    # message they hang under (it is written when the sub-prompt returns).
    parent = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="children",
        db_constraint=False,
    )
    depth = models.PositiveSmallIntegerField(default=0)
    silent = models.BooleanField(default=False)
    # The conversation tree (issue #41). ``follows``: the top-level message this one follows
    # (None for the first). Writers may leave it empty: a database trigger
    # (``message_counts``) sets it on insert to the thread's newest top-level message not
    # on an abandoned branch, so the engine's append-only writes extend the active path
    # without knowing about branches. ``abandoned``: off the active path (kept, counted
    # apart, hidden from the engine and from branch-unaware reads). A plain UUID, not a
    # foreign key: deleting a message must not cascade down the rest of the conversation.
    follows = models.UUIDField(null=True, blank=True)
    abandoned = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)
    # "a" or "b": the side that authored it (the stored role also encodes it for dual_ai).
    side = models.CharField(max_length=1, blank=True)
    # Schema: list of AttachmentRef {id, type:"file", path, name, mimeType, size, width?, height?}.
    attachments = models.JSONField(null=True, blank=True)
    reasoning_content = models.TextField(null=True, blank=True)
    reasoning_details = models.JSONField(null=True, blank=True)
    log = models.ForeignKey(
        Log, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    prompt_name = models.CharField(max_length=128, blank=True)
    # For rows about a subagent (results delivered to the parent, spawn calls).
    subagent = models.ForeignKey(
        Thread,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="parent_messages",
        db_constraint=False,
    )

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["thread", "tool_call_id"], name="message_thread_toolcall"),
            # The sweep's expiry scan of waiting tool calls (services.sessions.tool_waits.expire_due):
            # partial, so it holds only the few pending tool rows.
            models.Index(
                fields=["created_at"],
                name="message_pending_tool",
                condition=models.Q(status="pending", role="tool"),
            ),
            # The alternatives of a message (``services.threads.branches``): the other children of
            # its parent are abandoned rows, so this partial index holds only those and
            # costs the engine's inserts nothing.
            models.Index(
                fields=["thread", "follows"],
                name="message_abandoned_follows",
                condition=models.Q(abandoned=True),
            ),
        ]
        constraints = [
            # Its index also serves newest-page and history reads:
            # WHERE thread=? ORDER BY created_at DESC LIMIT n (a second index on the same
            # columns only slowed every insert on the engine's hot path). On PostgreSQL
            # it also carries depth and silent (INCLUDE, migration 0011), so the page's
            # total is an index-only scan instead of a visit to every row of the thread;
            # SQLite has no INCLUDE and keeps the plain constraint.
            models.UniqueConstraint(
                fields=["thread", "created_at"], name="uniq_message_thread_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {(self.content or '')[:40]}"


class QueuedMessage(models.Model):
    """A message waiting for the thread's next step (the reference's ``message_queue``).

    Durable and ordered: posted while a session runs, queued by subagents and
    ``queue_message``; drained in ``created_at`` order; parked while stopped.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="queued_messages")
    role = models.CharField(max_length=16, choices=Message.Role.choices, default=Message.Role.USER)
    content = models.TextField(blank=True)
    attachments = models.JSONField(null=True, blank=True)
    silent = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.BigIntegerField(default=now_us)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["thread", "created_at"], name="queue_thread_time")]

    def __str__(self) -> str:
        return f"queued {self.role}: {self.content[:40]}"


class ThreadMessageCount(models.Model):
    """How many of a thread's stored messages the default messages page counts: top level
    (``depth`` 0), not silent and on the active path (``top_level``). Its ``total`` reads this row instead of counting the
    thread's messages, so the page costs the same on a 10,000-message thread as on a
    100-message one (issue #21).

    Kept by database triggers on the message table (``agents_app/db/message_counts.py``), not
    by our code: every write path (the engine's one-statement commit, bulk drains, deletes,
    retention's batched deletes) keeps it without knowing about it. A table of its own,
    not a column of ``Thread``, so a stale ``thread.save()`` can never write an old count
    back, and the count's row locks never wait on the thread's other updates.
    """

    thread = models.OneToOneField(
        Thread, on_delete=models.CASCADE, primary_key=True, related_name="message_count"
    )
    top_level = models.IntegerField(default=0)
    # The same count of the messages on abandoned branches (issue #41): kept, not in the
    # page's ``total``.
    abandoned = models.IntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.top_level} messages"
