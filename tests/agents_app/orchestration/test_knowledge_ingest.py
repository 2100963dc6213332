"""Knowledge documents reach the workers: the Celery task ingests by id, and in the embedded
mode the sweep (``knowledge-tick``) ingests a dead worker's document on a thread of its own."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from agents_app.models import DocumentStatus, KnowledgeBase, KnowledgeDocument
from agents_app.orchestration.periodic import AUTOMATION
from agents_app.services.knowledge.documents import document_add
from agents_app.tasks.knowledge_tasks import knowledge_ingest


@pytest.fixture(autouse=True)
def media(tmp_path: Any) -> Iterator[None]:
    with override_settings(MEDIA_ROOT=str(tmp_path)):
        yield


def _document() -> KnowledgeDocument:
    base = KnowledgeBase.objects.create(name="faq")
    return document_add(base=base, filename="faq.txt", content_type="", data=b"We open at nine.")


@pytest.mark.django_db
def test_the_celery_task_ingests_the_document_once() -> None:
    document = _document()
    assert knowledge_ingest.run(document.pk) == DocumentStatus.READY
    assert knowledge_ingest.run(document.pk) == "skipped"  # delivered twice


@pytest.mark.django_db(transaction=True)
def test_embedded_sweep_takes_up_a_dead_workers_document(settings: Any) -> None:
    settings.STUDIO_EXECUTOR = "inprocess"
    document = _document()
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        status=DocumentStatus.EMBEDDING, claimed_at=timezone.now() - timedelta(hours=1)
    )
    assert AUTOMATION["agents_app.knowledge_tick"]() == 1
    for thread in threading.enumerate():
        if thread.name == "knowledge-ingest":
            thread.join()
    document.refresh_from_db()
    assert (document.status, document.chunk_count) == (DocumentStatus.READY, 1)
