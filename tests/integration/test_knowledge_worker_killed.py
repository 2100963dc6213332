"""A Celery worker killed (``kill -9``) while it embeds a knowledge document: another worker
takes the document up and finishes it, every passage stored exactly once (issue #59,
docs/knowledge.md "Ingestion, on the workers").

Real processes: PostgreSQL, Redis, two Celery workers (the first killed mid-embedding, the
second with beat, whose ``knowledge-tick`` finds the silent heartbeat), and the local
embedding model, whose few hundred milliseconds a passage keep the document in *embedding*
long enough to kill the worker in the middle.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.stack import Stack, wait_until

pytestmark = pytest.mark.integration

# About 30 passages of distinct sentences (a passage is about 800 characters).
SENTENCES = [
    f"Clause {n}: the {colour} storeroom of the {wing} wing holds {n * 3} crates of "
    f"{thing}, counted every {weekday} by the {role}."
    for n, (wing, colour, thing, weekday, role) in enumerate(
        (g, c, t, w, r)
        for g in ("north", "south")
        for c in ("red", "amber", "green", "violet")
        for t in ("lanterns", "rope", "tea", "maps", "nails")
        for w in ("Monday", "Thursday")
        for r in ("quartermaster", "night porter", "archivist")
    )
]

ADD = """
from agents_app.models import KnowledgeBase
from agents_app.orchestration.knowledge_ingest import enqueue
from agents_app.services.knowledge.documents import document_add
from django.db import transaction
base, _ = KnowledgeBase.objects.get_or_create(name="stores")
with transaction.atomic():
    d = document_add(base=base, filename="stores.txt", content_type="text/plain", data=DATA)
    enqueue(d.pk)
print("DOC", d.pk)
"""

STATE = (
    "SELECT status, chunk_count, chunks_embedded, failure FROM agents_app_knowledgedocument"
    " WHERE id = %s"
)
CHUNKS = "SELECT id, ordinal FROM agents_app_knowledgechunk WHERE document_id = %s ORDER BY id"


def test_issue59_a_worker_killed_mid_ingestion_resumes_every_passage_exactly_once(
    stack: Stack, worker: Any
) -> None:
    data = " ".join(SENTENCES).encode()
    doomed = worker("kb-doomed")
    out = stack.python(f"DATA = {data!r}\n{ADD}")
    document_id = int(out.split("DOC", 1)[1].split()[0])

    def mid_embedding() -> bool:
        status, total, embedded, _ = stack.sql(STATE, document_id)[0]
        assert status not in ("ready", "failed"), "finished before it could be killed"
        return status == "embedding" and 8 <= embedded < total

    wait_until(mid_embedding, "the first worker to be embedding", timeout=180, interval=0.05)
    doomed.kill_hard()
    status, total, embedded_before, _ = stack.sql(STATE, document_id)[0]
    kept = stack.sql(CHUNKS, document_id)
    assert status == "embedding" and 0 < len(kept) == embedded_before < total

    # The stale limit must outlast one batch's embedding (the heartbeat's step): at 3 s, on a
    # loaded machine, each claimant was taken for dead by the next sweep and none finished.
    rescuer = worker(
        "kb-rescuer",
        beat=True,
        env={"STUDIO_KNOWLEDGE_STALE_SECONDS": "30", "STUDIO_KNOWLEDGE_SWEEP_SECONDS": "1"},
    )
    wait_until(
        lambda: stack.sql(STATE, document_id)[0][0] in ("ready", "failed"),
        "the document to be finished by the second worker",
        timeout=300,
        interval=0.5,
    )
    status, total, embedded, failure = stack.sql(STATE, document_id)[0]
    assert (status, failure) == ("ready", ""), failure
    chunks = stack.sql(CHUNKS, document_id)
    ordinals = sorted(o for _, o in chunks)
    assert ordinals == list(range(total)) and embedded == total  # each passage exactly once
    # Resumed, not redone: the passages embedded before the kill are the same rows.
    assert set(kept) <= set(chunks)
    log = rescuer.log.read_text(errors="replace")
    assert "agents_app.knowledge_ingest" in log and "succeeded" in log, log
