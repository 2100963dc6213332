"""Provider embeddings (docs/knowledge.md, "The embedding model"): a base whose embedding
model names an OpenAI-compatible or a Gemini model definition is embedded by that vendor's
API, here a real HTTP server on loopback answering in the vendors' documented shapes, with
the provider's key from the env values, the egress key rule, and the cost accounted (on the
document for ingestion, as a Log row for a search from a thread). A missing key fails the
document with a reason naming the env value; changing the model re-embeds every document."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from agents_app.models import (
    DocumentStatus,
    EnvValue,
    KnowledgeBase,
    KnowledgeChunk,
    LanguageModel,
    Log,
    Thread,
)
from agents_app.models.agents import Agent
from agents_app.services.knowledge.bases import base_save, parse_definition
from agents_app.services.knowledge.documents import document_add
from agents_app.services.knowledge.embedding import embedding_model_problem
from agents_app.services.knowledge.ingestion import document_ingest
from agents_app.services.knowledge.search import search
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.services.knowledge.embedding_server import Seen, embedding_server

pytestmark = pytest.mark.django_db

PLANTED = "sk-planted-embedding-key-4412"
GUIDE = b"""# Returns

Customers may send purchases back within thirty days for a full refund.

# Shipping

Parcels leave the warehouse every weekday and express delivery costs extra.
"""


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Seen]]:
    with embedding_server() as running:
        yield running


@pytest.fixture
def seen(server: tuple[str, Seen]) -> Seen:
    server[1].requests.clear()
    return server[1]


def _model(name: str, provider: str, model_id: str, base_url: str, **kw: Any) -> LanguageModel:
    return LanguageModel.objects.create(
        name=name,
        provider=provider,
        model=model_id,
        base_url=base_url,
        input_price=Decimal("0.02"),
        send_instance_key_to_base_url=kw.pop("blessed", True),
        **kw,
    )


def _instance_key(name: str, value: str) -> None:
    row = EnvValue(scope="instance", key=name, value_type="secret")
    row.value = value
    row.save()


def _base(model: str) -> KnowledgeBase:
    base, _ = base_save(parse_definition({"name": "guide", "embeddingModel": model}))
    return base


def _ingested(base: KnowledgeBase) -> Any:
    document = document_add(
        base=base, filename="guide.md", content_type="text/markdown", data=GUIDE
    )
    status = document_ingest(document.pk)
    document.refresh_from_db()
    return status, document


def test_openai_compatible_embeddings_index_search_and_cost(
    server: tuple[str, Seen], seen: Seen, alice: Any
) -> None:
    _model("emb", "openai", "text-embedding-3-small", f"{server[0]}/v1")
    _instance_key("OPENAI_API_KEY", PLANTED)
    status, document = _ingested(_base("emb"))

    assert status == DocumentStatus.READY
    first = seen.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["headers"]["authorization"] == f"Bearer {PLANTED}"
    assert first["body"]["model"] == "text-embedding-3-small"
    assert document.embedding_tokens == 10 * document.chunk_count
    assert document.embedding_cost == Decimal(document.embedding_tokens) * Decimal("0.02") / 10**6

    define_agent("helper")
    thread = Thread.objects.create(
        owner=alice,
        agent=Agent.objects.get(name="helper"),
        origin_agent_id=Agent.objects.get(name="helper").pk,
    )
    found = search(
        KnowledgeBase.objects.get(name="guide"), "refund thirty days", 1, thread_id=str(thread.pk)
    )
    assert found[0].heading_path == "Returns"
    log = Log.objects.get(thread=thread)
    assert (log.provider, log.model, log.model_id) == ("openai", "emb", "text-embedding-3-small")
    assert log.input_tokens == 10 and log.cost_total == Decimal("0.0000002")
    assert PLANTED not in str(log.request_body) + str(log.response_body)


def test_gemini_batch_embed_contents_with_the_process_key(
    server: tuple[str, Seen], seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    _model("gem", "google", "text-embedding-004", f"{server[0]}/v1beta")
    monkeypatch.setenv("GOOGLE_API_KEY", PLANTED)
    status, _ = _ingested(_base("gem"))

    assert status == DocumentStatus.READY
    request = seen.requests[0]
    assert request["path"] == "/v1beta/models/text-embedding-004:batchEmbedContents"
    assert request["headers"]["x-goog-api-key"] == PLANTED
    assert {r["taskType"] for r in request["body"]["requests"]} == {"RETRIEVAL_DOCUMENT"}
    found = search(KnowledgeBase.objects.get(name="guide"), "warehouse parcels weekday", 1)
    assert found[0].heading_path == "Shipping"
    assert seen.requests[-1]["body"]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


def test_a_missing_key_fails_the_document_naming_the_env_value(
    server: tuple[str, Seen], seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _model("emb", "openai", "text-embedding-3-small", f"{server[0]}/v1")
    status, document = _ingested(_base("emb"))

    assert status == DocumentStatus.FAILED
    assert "set the env value OPENAI_API_KEY" in document.failure
    assert seen.requests == []  # nothing was sent


def test_the_instance_key_is_withheld_from_a_base_url_no_superuser_allowed(
    server: tuple[str, Seen], seen: Seen
) -> None:
    _model("emb", "openai", "text-embedding-3-small", f"{server[0]}/v1", blessed=False)
    _instance_key("OPENAI_API_KEY", PLANTED)
    status, document = _ingested(_base("emb"))

    assert status == DocumentStatus.FAILED
    assert "OPENAI_API_KEY was not sent to 127.0.0.1" in document.failure
    assert PLANTED not in document.failure
    assert seen.requests == []


def test_changing_the_embedding_model_re_embeds_every_document(
    server: tuple[str, Seen], seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    _model("emb", "openai", "text-embedding-3-small", f"{server[0]}/v1")
    _model("gem", "google", "text-embedding-004", f"{server[0]}/v1beta")
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("GOOGLE_API_KEY", PLANTED)
    status, document = _ingested(_base("emb"))
    assert status == DocumentStatus.READY

    base, queued = base_save(parse_definition({"name": "guide", "embeddingModel": "gem"}))
    document.refresh_from_db()
    assert queued == [document.pk]
    assert document.status == DocumentStatus.QUEUED and document.chunk_count == 0
    assert not KnowledgeChunk.objects.filter(document=document).exists()
    assert document_ingest(document.pk) == DocumentStatus.READY
    assert seen.requests[-1]["path"].endswith(":batchEmbedContents")
    assert base_save(parse_definition({"name": "guide", "embeddingModel": "gem"}))[1] == []


def test_an_embedding_model_without_an_embeddings_api_is_refused_with_a_sentence() -> None:
    LanguageModel.objects.create(name="claude", provider="anthropic", model="claude-x")
    assert embedding_model_problem("local") is None
    assert "neither 'local' nor the name of a model definition" in (
        embedding_model_problem("nope") or ""
    )
    assert "has no embeddings API here" in (embedding_model_problem("claude") or "")


def test_a_defined_provider_embeds_at_its_own_base_url_with_its_key(
    server: tuple[str, Seen], seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtime.providers.compatible.definition import define_provider
    from runtime.providers.registry import define, undefine

    define(
        define_provider(
            name="acme", base_url=f"{server[0]}/v1", api_key={"default_env": "ACME_API_KEY"}
        )
    )
    try:
        monkeypatch.setenv("ACME_API_KEY", PLANTED)
        LanguageModel.objects.create(name="acme-emb", provider="acme", model="acme-embed")
        status, _ = _ingested(_base("acme-emb"))
    finally:
        undefine("acme")

    assert status == DocumentStatus.READY
    assert seen.requests[0]["path"] == "/v1/embeddings"
    assert seen.requests[0]["headers"]["authorization"] == f"Bearer {PLANTED}"
    assert seen.requests[0]["body"]["model"] == "acme-embed"
