"""Redact what users typed before typed text was redacted on write (``redact_typed_text``).

Message posts, edits and KV values are redacted when written (``services.threads.messages``,
``services.threads.values``); rows stored earlier may still hold a secret in clear: the
thread list's preview, queued messages, stored messages and KV values. This walks the
threads in primary-key batches, one redactor per thread, and rewrites only rows that change,
each thread in its own short transaction (sessions are never blocked for long).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from django.db import transaction

from agents_app.models import Message, QueuedMessage, Thread, ThreadValue
from agents_app.services.env.redaction import thread_redactor
from runtime.core.redaction import Redactor

BATCH = 200


@dataclass
class BackfillReport:
    threads: int = 0
    changed: dict[str, int] = field(
        default_factory=lambda: {"previews": 0, "queued": 0, "messages": 0, "values": 0}
    )


def redact_typed_text(batch: int = BATCH) -> BackfillReport:
    """Redact every thread's stored typed text with its secrets; safe to run again."""
    report = BackfillReport()
    last = None
    while True:
        ids = Thread.objects.order_by("pk").values_list("pk", flat=True)
        page = list((ids.filter(pk__gt=last) if last else ids)[:batch])
        if not page:
            return report
        for thread_id in page:
            redactor = thread_redactor(str(thread_id))
            if redactor:
                _redact_thread(thread_id, redactor, report)
            report.threads += 1
        last = page[-1]


@transaction.atomic
def _redact_thread(thread_id: UUID, redactor: Redactor, report: BackfillReport) -> None:
    thread = Thread.objects.select_for_update().get(pk=thread_id)
    preview = redactor.text(thread.last_message_preview)
    if preview != thread.last_message_preview:
        Thread.objects.filter(pk=thread_id).update(last_message_preview=preview)
        report.changed["previews"] += 1
    for model, key in ((QueuedMessage, "queued"), (Message, "messages")):
        for row in model.objects.filter(thread_id=thread_id).only("pk", "content").iterator():
            content = redactor.text(row.content or "")
            if content != (row.content or ""):
                model.objects.filter(pk=row.pk).update(content=content)
                report.changed[key] += 1
    for value in ThreadValue.objects.filter(thread_id=thread_id).iterator():
        redacted = redactor.data(value.value)
        if redacted != value.value:
            ThreadValue.objects.filter(pk=value.pk).update(value=redacted)
            report.changed["values"] += 1
