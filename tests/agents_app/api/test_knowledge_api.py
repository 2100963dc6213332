"""Knowledge bases over the API (docs/knowledge.md, docs/api.md "Knowledge bases"): bases
created, read, changed and deleted with the studio's permissions; documents uploaded with the
studio's checks, listed with their status in words, replaced, re-indexed and deleted; the
search returns passages with document, heading, page and link, and answers 404 to a person
outside the base's audience or, for a draft, to anyone without ``view_knowledgebase``.
Embeddings come from a real loopback server in OpenAI's shape (fast and deterministic)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.files.uploadedfile import SimpleUploadedFile

from agents_app.models import KnowledgeBase, KnowledgeChunk, KnowledgeDocument, LanguageModel
from agents_app.services.knowledge.ingestion import document_ingest
from tests.agents_app.api.api_support import _api_hosts, as_  # noqa: F401
from tests.agents_app.services.knowledge.embedding_server import Seen, embedding_server
from tests.agents_app.services.knowledge.sample_files import pdf_bytes

pytestmark = pytest.mark.django_db

GUIDE = b"# Returns\n\nCustomers may send purchases back within thirty days for a refund.\n\n" + (
    b"# Shipping\n\nParcels leave the warehouse every weekday.\n"
)
PLANTED = "sk-planted-api-key-8812"


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Seen]]:
    with embedding_server() as running:
        yield running


@pytest.fixture(autouse=True)
def media(tmp_path: Any, settings: Any) -> None:
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture
def emb(server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    LanguageModel.objects.create(
        name="emb",
        provider="openai",
        model="text-embedding-3-small",
        base_url=f"{server[0]}/v1",
        input_price=Decimal("0.02"),
        send_instance_key_to_base_url=True,
    )
    return "emb"


def _staff(make_user: Any, name: str, *codenames: str) -> Any:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return type(user).objects.get(pk=user.pk)  # a fresh permission cache


def _upload(client: Any, path: str, name: str, data: bytes, kind: str = "text/markdown") -> Any:
    return client.post(path, {"file": SimpleUploadedFile(name, data, content_type=kind)})


def _ready_base(as_: Any, ops: Any, emb: str, **fields: Any) -> int:  # noqa: F811
    response = as_(ops).post_json(
        "/api/knowledge", {"name": "guide", "embeddingModel": emb, **fields}
    )
    assert response.status_code == 201, response.content
    uploaded = _upload(as_(ops), "/api/knowledge/guide/documents", "guide.md", GUIDE)
    assert uploaded.status_code == 201, uploaded.content
    document_id: int = uploaded.json()["document"]["id"]
    assert document_ingest(document_id) == "ready"
    return document_id


def test_bases_are_created_read_changed_and_deleted(as_: Any, ops: Any) -> None:  # noqa: F811
    client = as_(ops)
    created = client.post_json("/api/knowledge", {"name": "guide", "description": "How to"})
    assert created.status_code == 201
    assert created.json()["knowledgeBase"] | {"createdAt": "", "updatedAt": ""} == {
        "name": "guide",
        "description": "How to",
        "embeddingModel": "local",
        "state": "published",
        "audience": [],
        "documents": 0,
        "documentsReady": 0,
        "createdAt": "",
        "updatedAt": "",
    }
    assert client.post_json("/api/knowledge", {"name": "guide"}).status_code == 409
    listed = client.get("/api/knowledge").json()["knowledgeBases"]
    assert [b["name"] for b in listed] == ["guide"]
    changed = client.put(
        "/api/knowledge/guide", {"state": "draft"}, content_type="application/json"
    )
    assert changed.json()["knowledgeBase"]["state"] == "draft"
    assert changed.json()["knowledgeBase"]["description"] == "How to"  # kept
    assert client.delete("/api/knowledge/guide").json() == {"success": True, "deleted": "guide"}
    assert client.get("/api/knowledge/guide").status_code == 404


def test_bad_bodies_are_json_errors_naming_the_field(as_: Any, ops: Any) -> None:  # noqa: F811
    client = as_(ops)
    bad = client.post("/api/knowledge", b"{not json", content_type="application/json")
    assert (bad.status_code, bad.json()) == (400, {"error": "Invalid JSON body"})
    unknown = client.post_json("/api/knowledge", {"name": "guide", "colour": "red"})
    assert unknown.status_code == 400
    assert "colour: is not a knowledge base field" in unknown.json()["error"]
    model = client.post_json("/api/knowledge", {"name": "guide", "embeddingModel": "nope"})
    assert "neither 'local' nor the name of a model definition" in model.json()["error"]
    group = client.post_json("/api/knowledge", {"name": "guide", "audience": ["hr"]})
    assert group.json() == {"error": "audience: no group named 'hr'."}
    client.post_json("/api/knowledge", {"name": "guide"})
    renamed = client.put("/api/knowledge/guide", {"name": "x"}, content_type="application/json")
    assert renamed.status_code == 400 and "fixed once saved" in renamed.json()["error"]


def test_documents_are_uploaded_listed_replaced_reindexed_and_deleted(
    as_: Any,  # noqa: F811
    ops: Any,
    emb: str,
) -> None:
    client = as_(ops)
    client.post_json("/api/knowledge", {"name": "guide", "embeddingModel": emb})
    refused = _upload(client, "/api/knowledge/guide/documents", "tool.exe", b"MZ", "x/y")
    assert refused.status_code == 400 and "is not a format we read" in refused.json()["error"]
    uploaded = _upload(client, "/api/knowledge/guide/documents", "guide.md", GUIDE).json()
    document = uploaded["document"]
    assert (document["status"], document["statusText"]) == (
        "queued",
        "Queued: waiting for a worker",
    )
    assert document["link"] == f"/admin/agents_app/knowledgedocument/{document['id']}/change/"
    document_ingest(document["id"])

    listed = client.get("/api/knowledge/guide/documents").json()["documents"]
    assert [(d["statusText"], d["progress"]) for d in listed] == [("Ready: 2 passages", 1.0)]
    assert listed[0]["embeddingTokens"] == 20
    path = f"/api/knowledge/guide/documents/{document['id']}"
    same = _upload(client, path, "guide.md", GUIDE).json()
    assert same["changed"] is False and same["document"]["status"] == "ready"
    new = _upload(client, path, "guide.md", GUIDE + b"\nMore.\n").json()
    assert new["changed"] is True and new["document"]["status"] == "queued"
    document_ingest(document["id"])
    again = client.post(f"{path}/reindex").json()["document"]
    assert again["statusText"] == "Queued: waiting for a worker"
    assert client.delete(path).status_code == 200
    assert not KnowledgeChunk.objects.exists() and not KnowledgeDocument.objects.exists()
    assert client.get(path).status_code == 404


def test_a_base_a_prompt_lists_is_not_deleted(as_: Any, ops: Any) -> None:  # noqa: F811
    from tests.agents_app.services.knowledge.test_knowledge_tool import _define

    as_(ops).post_json("/api/knowledge", {"name": "handbook"})
    _define(["knowledge:handbook"])
    refused = as_(ops).delete("/api/knowledge/handbook")
    assert refused.status_code == 409 and "listed by prompt(s) p" in refused.json()["error"]


def test_search_returns_passages_with_document_heading_page_and_link(
    as_: Any,  # noqa: F811
    ops: Any,
    alice: Any,
    emb: str,
) -> None:
    document_id = _ready_base(as_, ops, emb)
    pdf = pdf_bytes([["Welcome aboard."], ["Bicycles may be borrowed at weekends."]])
    pdf_id = _upload(
        as_(ops), "/api/knowledge/guide/documents", "staff.pdf", pdf, "application/pdf"
    ).json()["document"]["id"]
    document_ingest(pdf_id)

    found = as_(alice).post_json("/api/knowledge/guide/search", {"query": "refund thirty days"})
    assert found.status_code == 200
    top = found.json()["passages"][0]
    assert (top["document"], top["documentId"], top["heading"], top["page"]) == (
        "guide",
        document_id,
        "Returns",
        None,
    )
    assert top["link"].endswith(f"/knowledgedocument/{document_id}/change/")
    paged = as_(alice).post_json(
        "/api/knowledge/guide/search",
        {"query": "bicycles weekends", "k": 3, "filters": {"pages": [2, 2]}},
    )
    assert [(p["document"], p["page"]) for p in paged.json()["passages"]] == [("staff", 2)]
    only = as_(alice).post_json(
        "/api/knowledge/guide/search",
        {"query": "bicycles", "filters": {"documents": [document_id]}},
    )
    assert {p["documentId"] for p in only.json()["passages"]} == {document_id}
    bad = as_(alice).post_json("/api/knowledge/guide/search", {"query": "x", "k": 99})
    assert bad.status_code == 400 and "k must be a whole number from 1 to 20" in bad.json()["error"]


def test_search_outside_the_audience_or_of_a_draft_is_404(
    as_: Any,  # noqa: F811
    ops: Any,
    alice: Any,
    bob: Any,
    make_user: Any,
    emb: str,
) -> None:
    Group.objects.create(name="hr").user_set.add(alice)
    _ready_base(as_, ops, emb, audience=["hr"])
    query = {"query": "refund"}

    assert as_(alice).post_json("/api/knowledge/guide/search", query).status_code == 200
    outside = as_(bob).post_json("/api/knowledge/guide/search", query)
    assert (outside.status_code, outside.json()) == (
        404,
        {"error": "Knowledge base not found: guide"},
    )
    as_(ops).put("/api/knowledge/guide", {"state": "draft"}, content_type="application/json")
    assert as_(alice).post_json("/api/knowledge/guide/search", query).status_code == 404
    reader = _staff(make_user, "reader", "view_knowledgebase")
    assert as_(reader).post_json("/api/knowledge/guide/search", query).status_code == 200


def test_a_missing_key_is_named_to_staff_only(
    as_: Any,  # noqa: F811
    ops: Any,
    alice: Any,
    emb: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _ready_base(as_, ops, emb)
    monkeypatch.delenv("OPENAI_API_KEY")
    to_alice = as_(alice).post_json("/api/knowledge/guide/search", {"query": "refund"})
    assert to_alice.status_code == 503
    assert "OPENAI_API_KEY" not in to_alice.json()["error"]
    to_ops = as_(ops).post_json("/api/knowledge/guide/search", {"query": "refund"})
    assert "set the env value OPENAI_API_KEY" in to_ops.json()["error"]
    for response in (to_alice, to_ops, as_(ops).get("/api/knowledge/guide/documents")):
        assert PLANTED not in response.content.decode()


def test_documents_need_the_studio_document_permissions(
    as_: Any,  # noqa: F811
    ops: Any,
    make_user: Any,
) -> None:
    as_(ops).post_json("/api/knowledge", {"name": "guide"})
    viewer = _staff(make_user, "viewer", "view_knowledgebase", "view_knowledgedocument")
    assert as_(viewer).get("/api/knowledge/guide/documents").status_code == 200
    upload = _upload(as_(viewer), "/api/knowledge/guide/documents", "guide.md", GUIDE)
    assert upload.status_code == 403
    assert KnowledgeBase.objects.get(name="guide").documents.count() == 0
