"""Model discovery through the service and the API: cache vs refresh (counted at a real
local vendor server), paging and search, the reference studio's helper routes, errors in
plain words, auth, and the key never leaving the server.

Vendor answers: the real OpenRouter and Gemini recordings; OpenAI's 401 body is written
by hand from OpenAI's documented error shape (no 401 recording exists), its 429 body is
the recorded ``openai/error_429_insufficient_quota.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.cache import cache

from agents_app.models import EnvValue, LanguageModel
from agents_app.services.definitions import model_catalog
from runtime.core import egress
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.runtime.providers.recordings import cassette, raw
from tests.runtime.providers.replay import ReplayServer, Reply

pytestmark = pytest.mark.django_db

PLANTED = "sk-or-PLANTED-5e1d0c9b8a7f-never-show-me"


@pytest.fixture
def vendor(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayServer]:
    # The replay server plays the vendors' own hosts, where the instance's key may go
    # (the egress key rule: tests/agents_app/services/test_egress.py).
    for provider in egress.OFFICIAL_HOSTS:
        monkeypatch.setitem(egress.OFFICIAL_HOSTS, provider, frozenset({"127.0.0.1"}))
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def _instance_key(name: str, value: str = PLANTED) -> None:
    row = EnvValue(scope="instance", key=name, value_type="secret")
    row.value = value
    row.save()


@pytest.fixture
def openrouter(vendor: ReplayServer) -> LanguageModel:
    _instance_key("OPENROUTER_API_KEY")
    return LanguageModel.objects.create(
        name="router", provider="openrouter", model="openai/gpt-4o", base_url=vendor.url + "/api/v1"
    )


def _listing() -> Reply:
    return cassette("openrouter/models_list.yaml")[0].reply()


def test_the_listing_is_cached_until_refresh_is_asked(
    as_: Any, ops: Any, vendor: ReplayServer, openrouter: LanguageModel
) -> None:
    vendor.queue(_listing(), _listing())
    client = as_(ops)
    first = client.get("/api/providers/openrouter/models?model=router")
    assert first.status_code == 200, first.content
    assert len(vendor.requests) == 1
    assert vendor.requests[0].headers["authorization"] == f"Bearer {PLANTED}"
    assert urlsplit(vendor.requests[0].path).path == "/api/v1/models"
    again = client.get("/api/providers/openrouter/models?model=router")
    assert again.json() == first.json()
    assert len(vendor.requests) == 1  # answered from the cache
    fresh = client.get("/api/providers/openrouter/models?model=router&refresh=true")
    assert fresh.status_code == 200
    assert len(vendor.requests) == 2  # refresh asked the vendor again
    body = first.json()
    assert body["provider"] == "openrouter" and body["total"] == 4
    sonnet = next(m for m in body["models"] if m["id"] == "anthropic/claude-sonnet-4")
    assert sonnet["inputPrice"] == 3.0 and sonnet["outputPrice"] == 15.0
    assert sonnet["cachedPrice"] == 0.3 and sonnet["contextLength"] == 1000000
    assert sonnet["capabilities"]["vision"] is True
    assert PLANTED not in first.content.decode()


def test_pages_and_search(as_: Any, ops: Any, vendor: ReplayServer, openrouter: Any) -> None:
    vendor.queue(_listing())
    client = as_(ops)
    page1 = client.get("/api/providers/openrouter/models?model=router&perPage=3").json()
    assert (len(page1["models"]), page1["hasNextPage"], page1["total"]) == (3, True, 4)
    page2 = client.get("/api/providers/openrouter/models?model=router&perPage=3&page=2").json()
    assert len(page2["models"]) == 1 and page2["hasNextPage"] is False
    ids = {m["id"] for m in page1["models"] + page2["models"]}
    assert len(ids) == 4
    found = client.get(
        "/api/providers/openrouter/models?model=router&search=GPT-3.5%20TURBO"
    ).json()
    assert [m["id"] for m in found["models"]] == ["openai/gpt-3.5-turbo"]
    assert len(vendor.requests) == 1  # paging and search never ask the vendor again


def test_reference_studio_helpers(
    as_: Any, ops: Any, vendor: ReplayServer, openrouter: Any
) -> None:
    vendor.queue(_listing())
    client = as_(ops)
    available = client.post_json(
        "/api/models/available",
        {"provider": "openrouter", "filter": "sonnet", "page": 1, "perPage": 10, "model": "router"},
    )
    assert available.status_code == 200, available.content
    [option] = available.json()["models"]
    assert option["value"] == "anthropic/claude-sonnet-4"
    assert option["label"] == "Anthropic: Claude Sonnet 4"
    assert (option["input_price"], option["output_price"]) == (3.0, 15.0)
    assert option["iconId"] == "openrouter" and option["slug"] == "anthropic/claude-sonnet-4"
    assert available.json()["hasNextPage"] is False
    caps = client.post_json(
        "/api/models/capabilities",
        {"provider": "openrouter", "modelId": "openai/gpt-3.5-turbo", "model": "router"},
    ).json()
    assert caps == {
        "capabilities": {
            "supportsImages": False,
            "supportsToolCalls": True,
            "supportsJsonMode": True,
            "maxContextTokens": 16385,
            "maxOutputTokens": 4096,
        }
    }
    unknown = client.post_json(
        "/api/models/capabilities",
        {"provider": "openrouter", "modelId": "nobody/none", "model": "router"},
    )
    assert unknown.json() == {"capabilities": None}
    endpoints_body = {
        "data": {
            "id": "openai/gpt-4o",
            "endpoints": [
                {
                    "name": "OpenAI | openai/gpt-4o",
                    "provider_name": "OpenAI",
                    "context_length": 128000,
                    "pricing": {"prompt": "0.0000025", "completion": "0.00001"},
                }
            ],
        }
    }
    vendor.queue(Reply.json(endpoints_body))
    endpoints = client.post_json(
        "/api/models/endpoints",
        {"provider": "openrouter", "modelSlug": "openai/gpt-4o", "model": "router"},
    )
    assert endpoints.status_code == 200, endpoints.content
    [row] = endpoints.json()["endpoints"]
    assert row["providerName"] == "OpenAI" and row["inputPrice"] == 2.5
    refused = client.post_json("/api/models/endpoints", {"provider": "openai", "modelSlug": "x"})
    assert refused.status_code == 400
    assert "Only OpenRouter" in refused.json()["error"]


def test_a_refused_key_is_explained_in_plain_words_without_the_key(
    as_: Any, ops: Any, vendor: ReplayServer
) -> None:
    _instance_key("OPENAI_API_KEY")
    LanguageModel.objects.create(
        name="gpt", provider="openai", model="gpt-4o", base_url=vendor.url + "/v1"
    )
    refusal = {
        "error": {
            "message": f"Incorrect API key provided: {PLANTED}.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    vendor.queue(Reply.json(refusal, status=401))
    response = as_(ops).get("/api/providers/openai/models?model=gpt")
    assert response.status_code == 502
    message = response.json()["error"]
    assert message.startswith("The OpenAI key in OPENAI_API_KEY was refused (401).")
    assert PLANTED not in response.content.decode()
    # A failure is not cached: the next call asks again.
    vendor.queue(Reply.json({"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]}))
    assert as_(ops).get("/api/providers/openai/models?model=gpt").status_code == 200
    assert len(vendor.requests) == 2


def test_missing_key_unknown_provider_and_model(as_: Any, ops: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client = as_(ops)
    missing = client.get("/api/providers/anthropic/models")
    assert missing.status_code == 400
    assert missing.json()["error"].startswith("No API key for Anthropic: set ANTHROPIC_API_KEY")
    assert client.get("/api/providers/nope/models").json() == {"error": "Provider not found: nope"}
    ghost = client.get("/api/providers/openai/models?model=ghost")
    assert ghost.status_code == 404 and ghost.json() == {"error": "Model not found: ghost"}


def test_routes_are_staff_only(as_: Any, alice: Any, anonymous: Any) -> None:
    for client, status in ((as_(alice), 403), (anonymous, 401)):
        assert client.get("/api/providers/test/models").status_code == status
        for route in ("available", "capabilities", "endpoints"):
            body = {"provider": "test", "modelId": "x", "modelSlug": "x"}
            response = client.post_json(f"/api/models/{route}", body)
            assert response.status_code == status, (route, response.content)
            assert "error" in response.json()


def test_test_provider_lists_its_scripted_models(as_: Any, ops: Any, agent: str) -> None:
    body = as_(ops).get("/api/providers/test/models").json()
    assert [m["id"] for m in body["models"]] == ["scripted"]
    assert body["models"][0]["inputPrice"] == 0.0


def test_gemini_listing_through_the_service_follows_pages(vendor: ReplayServer) -> None:
    _instance_key("GOOGLE_API_KEY")
    first = cassette("gemini/models_list.yaml")[0]
    vendor.queue(first.reply(), Reply.json({"models": []}))
    models = model_catalog.list_provider_models("google", base_url=vendor.url + "/v1beta")
    assert len(vendor.requests) == 2
    assert "gemini-2.5-pro" in {m.id for m in models}


# --- test connection ------------------------------------------------------------------------


def test_connection_sends_one_token_with_the_resolved_key(vendor: ReplayServer) -> None:
    _instance_key("OPENAI_API_KEY")
    reply = cassette("openai/chat_nonstream_json_schema_output.yaml")[0].reply()
    vendor.queue(reply)
    result = model_catalog.check_connection("openai", "gpt-4o", base_url=vendor.url + "/v1")
    assert result["ok"] is True, result
    assert "works" in result["message"]
    [sent] = vendor.requests
    body = sent.json()
    assert body["model"] == "gpt-4o"
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 1
    assert sent.headers["authorization"] == f"Bearer {PLANTED}"


def test_connection_uses_the_api_the_model_chose(vendor: ReplayServer) -> None:
    _instance_key("OPENAI_API_KEY")
    vendor.queue(cassette("openai/responses_nonstream_text.yaml")[0].reply())
    result = model_catalog.check_connection(
        "openai", "gpt-5-mini", base_url=vendor.url + "/v1", api="responses"
    )
    assert result["ok"] is True, result
    [sent] = vendor.requests
    assert sent.path.endswith("/responses")
    assert sent.json()["max_output_tokens"] == 1


def test_connection_shows_the_vendors_error_in_plain_words(vendor: ReplayServer) -> None:
    _instance_key("OPENAI_API_KEY")
    vendor.queue(
        Reply(
            429,
            {"content-type": "application/json"},
            raw("openai/error_429_insufficient_quota.json"),
        )
    )
    result = model_catalog.check_connection("openai", "gpt-4o", base_url=vendor.url + "/v1")
    assert result["ok"] is False
    assert result["message"].startswith("OpenAI refused the request for now (429)")
    assert "exceeded your current quota" in result["message"]
    assert PLANTED not in json.dumps(result)
    assert len(vendor.requests) == 1  # one request: no retries behind the button


def test_the_users_own_key_wins_over_the_instance_key(
    as_: Any, ops: Any, vendor: ReplayServer, openrouter: Any
) -> None:
    mine = EnvValue(scope="user", user=ops, key="OPENROUTER_API_KEY", value_type="secret")
    mine.value = "sk-or-ops-own-key-1234"
    mine.save()
    vendor.queue(_listing())
    assert as_(ops).get("/api/providers/openrouter/models?model=router").status_code == 200
    assert vendor.requests[0].headers["authorization"] == "Bearer sk-or-ops-own-key-1234"
