"""The studio's knowledge base form (docs/knowledge.md): the embedding model is `local` or a
model definition with an embeddings API, refused on its field otherwise; choosing another one
re-embeds every document (queued again, its passages gone); state and audience are saved."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client, override_settings
from django.urls import reverse

from agents_app.models import DocumentStatus, KnowledgeBase, KnowledgeChunk, LanguageModel
from agents_app.services.knowledge.documents import document_add
from agents_app.services.knowledge.ingestion import document_ingest
from tests.agents_app.admin.admin_pages import errors_of, fill, read_form

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(tmp_path: Any) -> Iterator[None]:
    with override_settings(MEDIA_ROOT=str(tmp_path)):
        yield


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_an_embedding_model_without_an_embeddings_api_is_refused_on_its_field(
    staff: Client,
) -> None:
    LanguageModel.objects.create(name="claude", provider="anthropic", model="claude-x")
    add = reverse("admin:agents_app_knowledgebase_add")
    form = fill(read_form(staff, add), name="handbook", embedding_model="claude")
    response = staff.post(add, form)
    assert response.status_code == 200
    assert "has no embeddings API here" in str(errors_of(response))
    assert not KnowledgeBase.objects.exists()


def test_choosing_another_embedding_model_re_embeds_every_document(
    staff: Client, django_capture_on_commit_callbacks: Any
) -> None:
    LanguageModel.objects.create(name="emb", provider="openai", model="text-embedding-3-small")
    hr = Group.objects.create(name="hr")
    base = KnowledgeBase.objects.create(name="handbook")
    document = document_add(
        base=base, filename="faq.md", content_type="text/markdown", data=b"# FAQ\n\nOpen at nine."
    )
    assert document_ingest(document.pk) == DocumentStatus.READY
    change = reverse("admin:agents_app_knowledgebase_change", args=[base.pk])
    form = fill(
        read_form(staff, change), embedding_model="emb", state="draft", audience_groups=[hr.pk]
    )
    with django_capture_on_commit_callbacks() as queued:
        response = staff.post(change, form)
    assert response.status_code == 302, errors_of(response)
    document.refresh_from_db()
    assert document.status == DocumentStatus.QUEUED and len(queued) == 1
    assert not KnowledgeChunk.objects.exists()
    base.refresh_from_db()
    assert (base.embedding_model, base.state) == ("emb", "draft")
    assert list(base.audience_groups.all()) == [hr]
