"""Celery tasks for knowledge bases (thin: the work is in
``agents_app.services.knowledge.ingestion``; docs/knowledge.md).

``knowledge_ingest`` ingests one document; a duplicate delivery finds it claimed and does
nothing. Beat sends ``knowledge_tick`` every ``STUDIO_KNOWLEDGE_SWEEP_SECONDS``.
"""

from __future__ import annotations

from celery import shared_task

from agents_app.base.task_names import KNOWLEDGE_INGEST


@shared_task(name=KNOWLEDGE_INGEST, acks_late=True, ignore_result=True)
def knowledge_ingest(document_id: int) -> str:
    """Parse, chunk, embed and index one document; its final status."""
    from agents_app.services.knowledge.ingestion import document_ingest

    return document_ingest(document_id)


@shared_task(name="agents_app.knowledge_tick", acks_late=False, ignore_result=True)
def knowledge_tick() -> int:
    """Send again the documents whose task was lost or whose worker died."""
    from agents_app.orchestration.periodic import AUTOMATION

    return int(AUTOMATION["agents_app.knowledge_tick"]())
