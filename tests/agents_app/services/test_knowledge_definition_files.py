"""Knowledge bases in the definitions directory (docs/knowledge.md, "Import and export"):
``export_definitions --documents`` writes ``knowledge/<name>.json`` and the documents beside
it; importing that folder into an empty database creates the base (before the prompts that
list it), stores its documents and queues their ingestion, and the search then finds the
same passage. Mistakes are refused, all or nothing, one line each."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command

from agents_app.models import Agent, KnowledgeBase, KnowledgeDocument, LanguageModel, Prompt
from agents_app.services.definitions.files import DefinitionFilesInvalid, definitions_import
from agents_app.services.knowledge.bases import base_save, parse_definition
from agents_app.services.knowledge.documents import document_add
from agents_app.services.knowledge.ingestion import document_ingest
from agents_app.services.knowledge.search import search
from tests.agents_app.services.knowledge.embedding_server import Seen, embedding_server
from tests.agents_app.services.knowledge.test_knowledge_tool import _define

pytestmark = pytest.mark.django_db

GUIDE = b"# Returns\n\nCustomers may send purchases back within thirty days for a refund.\n\n" + (
    b"# Shipping\n\nParcels leave the warehouse every weekday.\n"
)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Seen]]:
    with embedding_server() as running:
        yield running


@pytest.fixture(autouse=True)
def setup(tmp_path: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.STUDIO_EXECUTOR = "none"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _top(query: str) -> tuple[str, str]:
    found = search(KnowledgeBase.objects.get(name="guide"), query, 1)
    return found[0].document_title, found[0].text


def test_export_then_import_into_an_empty_database_finds_the_same_passage(
    server: tuple[str, Seen], tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    LanguageModel.objects.create(
        name="emb",
        provider="openai",
        model="text-embedding-3-small",
        base_url=f"{server[0]}/v1",
        input_price=Decimal("0.02"),
        send_instance_key_to_base_url=True,
    )
    hr = Group.objects.create(name="hr")
    base, _ = base_save(
        parse_definition(
            {
                "name": "guide",
                "description": "Shop rules",
                "embeddingModel": "emb",
                "audience": ["hr"],
            }
        )
    )
    document = document_add(
        base=base, filename="guide.md", content_type="text/markdown", data=GUIDE
    )
    assert document_ingest(document.pk) == "ready"
    _define(["knowledge:guide"])
    before = _top("refund within thirty days")

    out = tmp_path / "defs"
    call_command("export_definitions", str(out), "--documents")
    assert json.loads((out / "knowledge" / "guide.json").read_text()) == {
        "name": "guide",
        "description": "Shop rules",
        "embeddingModel": "emb",
        "state": "published",
        "audience": ["hr"],
    }
    assert (out / "knowledge" / "guide" / "guide.md").read_bytes() == GUIDE

    Agent.objects.all().delete()
    Prompt.objects.all().delete()
    KnowledgeBase.objects.all().delete()
    LanguageModel.objects.all().delete()
    assert hr.pk  # the group stays: audiences name groups, which are not definitions
    with django_capture_on_commit_callbacks(execute=False) as sent:
        call_command("import_definitions", str(out))
    imported = KnowledgeDocument.objects.get(base__name="guide")
    assert imported.status == "queued" and len(sent) == 1  # its ingestion was sent
    # A superuser's consent to send the instance key off the vendor's host is not exported.
    LanguageModel.objects.filter(name="emb").update(send_instance_key_to_base_url=True)
    assert KnowledgeBase.objects.get(name="guide").audience_groups.get() == hr
    assert document_ingest(imported.pk) == "ready"
    assert _top("refund within thirty days") == before


def test_a_broken_knowledge_folder_imports_nothing_and_names_each_mistake(tmp_path: Path) -> None:
    tmp_path = tmp_path / "defs"
    folder = tmp_path / "knowledge"
    (folder / "orphan").mkdir(parents=True)
    (folder / "guide.json").write_text(json.dumps({"name": "guide", "colour": "red"}))
    (folder / "other.json").write_text(json.dumps({"name": "wrong"}))
    (folder / "notes.txt").write_text("hello")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "p.json").write_text(
        json.dumps({"name": "p", "model": "m", "prompt": "x", "tools": ["knowledge:guide"]})
    )
    with pytest.raises(DefinitionFilesInvalid) as caught:
        definitions_import(directory=tmp_path)
    text = "\n".join(caught.value.errors)
    assert "knowledge/orphan/: documents of no base (add knowledge/orphan.json)." in text
    assert "knowledge/guide.json: colour: is not a knowledge base field" in text
    assert "knowledge/other.json: name: The name 'wrong' does not match the file name" in text
    assert "knowledge/notes.txt: not a knowledge base file" in text
    assert not KnowledgeBase.objects.exists()


def test_documents_in_the_folder_are_added_or_replaced_on_a_second_import(
    tmp_path: Path,
) -> None:
    tmp_path = tmp_path / "defs"
    folder = tmp_path / "knowledge"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide.json").write_text(json.dumps({"name": "guide"}))
    (folder / "guide" / "guide.md").write_bytes(GUIDE)
    assert definitions_import(directory=tmp_path).queued_documents == [
        KnowledgeDocument.objects.get().pk
    ]
    assert definitions_import(directory=tmp_path).queued_documents == []  # same bytes
    (folder / "guide" / "guide.md").write_bytes(GUIDE + b"\nMore.\n")
    report = definitions_import(directory=tmp_path)
    assert report.queued_documents == [KnowledgeDocument.objects.get().pk]
    assert report.updated == ["knowledge/guide.json"]
