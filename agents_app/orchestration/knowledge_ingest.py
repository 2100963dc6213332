"""Knowledge documents handed to the workers (the work is
``services/knowledge/ingestion.py:document_ingest``; docs/knowledge.md).

After the commit that stored or replaced a document, ``enqueue`` sends the
``agents_app.knowledge_ingest`` task (Celery) or, in the embedded mode, ingests it on a
thread of its own (embedding takes seconds per page, never on the server's loop). A send
that fails is logged and left to the sweep, ``knowledge_tick``, which the periodic jobs run
every ``STUDIO_KNOWLEDGE_SWEEP_SECONDS``: it sends again the documents whose task was lost and
those a dead worker left half-done. The claim in ``document_ingest`` makes a duplicate send
harmless.
"""

from __future__ import annotations

import functools
import logging
import threading

from celery import current_app
from django.conf import settings
from django.db import connection, transaction

from agents_app.base.task_names import KNOWLEDGE_INGEST
from agents_app.services.knowledge.ingestion import document_ingest, documents_due

logger = logging.getLogger("agents_app.knowledge")


def enqueue(document_id: int) -> None:
    """Ingest ``document_id`` after the current transaction commits (never in the caller)."""
    transaction.on_commit(functools.partial(start, document_id))


def start(document_id: int) -> None:
    """Send the ingestion now: the Celery task, or a thread in the embedded mode."""
    try:
        if settings.STUDIO_EXECUTOR == "celery":
            current_app.send_task(KNOWLEDGE_INGEST, (document_id,))
        else:
            threading.Thread(
                target=_ingest_in_thread,
                args=(document_id,),
                name="knowledge-ingest",
                daemon=True,
            ).start()
    except Exception as exc:  # the broker is down: the sweep sends it
        logger.warning(
            "knowledge document %s not enqueued (%s); the sweep sends it", document_id, exc
        )


def _ingest_in_thread(document_id: int) -> None:
    try:
        document_ingest(document_id)
    finally:
        connection.close()  # this thread's own connection


def knowledge_tick() -> int:
    """Send the documents whose task was lost or whose worker died; how many."""
    due = documents_due()
    for document_id in due:
        start(document_id)
    return len(due)
