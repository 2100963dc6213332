"""Model discovery per vendor, from a real local HTTP server.

Gemini and OpenRouter answer with the real recordings (``gemini/models_list.yaml``,
``openrouter/models_list.yaml``). For OpenAI and Anthropic no recorded ``GET /v1/models``
exists (``INDEX.md``, "not found"): their bodies below are written by hand from the
vendors' documented response shapes (OpenAI API reference "List models":
``{object: "list", data: [{id, object: "model", created, owned_by}]}``; Anthropic API
reference "List Models": ``{data: [{type: "model", id, display_name, created_at,
max_input_tokens, max_tokens, capabilities}], has_more, first_id, last_id}`` with
``after_id`` / ``limit`` query parameters).
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from runtime.providers import errors
from runtime.providers.discovery import (
    ProviderModelsQuery,
    get_model_capabilities,
    list_models,
    models_page,
    openrouter_endpoints,
)

from .conftest import PLANTED_KEY
from .recordings import cassette
from .replay import Reply


def _query(path: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(path).query)


async def test_gemini_follows_next_page_token_and_maps_token_limits(replay, client):
    first = cassette("gemini/models_list.yaml")[0]
    token = first.response_json()["nextPageToken"]
    # The recording is the real first page; the last page is written here (no token).
    last = {
        "models": [
            {
                "name": "models/gemini-last-page",
                "displayName": "Gemini Last Page",
                "inputTokenLimit": 32768,
                "outputTokenLimit": 8192,
                "supportedGenerationMethods": ["generateContent"],
            }
        ]
    }
    replay.queue(first.reply(), Reply.json(last))
    models = await list_models("google", client, PLANTED_KEY, replay.url + "/v1beta")

    assert len(replay.requests) == 2
    assert [r.method for r in replay.requests] == ["GET", "GET"]
    assert urlsplit(replay.requests[0].path).path == "/v1beta/models"
    assert "pageToken" not in _query(replay.requests[0].path)
    assert _query(replay.requests[1].path)["pageToken"] == [token]
    assert replay.requests[0].headers["x-goog-api-key"] == PLANTED_KEY
    assert PLANTED_KEY not in replay.requests[0].path  # never in the URL

    by_id = {m.id: m for m in models}
    flash = by_id["gemini-2.5-flash"]  # "models/" prefix removed
    assert (flash.name, flash.context_length, flash.max_output_tokens) == (
        "Gemini 2.5 Flash",
        1048576,
        65536,
    )
    assert flash.capabilities.reasoning is True
    assert by_id["gemini-2.0-flash"].capabilities.reasoning is None  # the listing says nothing
    assert "gemini-last-page" in by_id
    # Embeddings, Imagen and Veo cannot chat: left out.
    assert not {"gemini-embedding-001", "imagen-4.0-generate-001", "aqa"} & set(by_id)
    assert flash.input_price is None  # Gemini's list has no prices: none invented


async def test_openrouter_prices_per_token_become_usd_per_million(replay, client):
    replay.queue(cassette("openrouter/models_list.yaml")[0].reply())
    models = await list_models("openrouter", client, PLANTED_KEY, replay.url + "/api/v1")

    assert urlsplit(replay.requests[0].path).path == "/api/v1/models"
    assert replay.requests[0].headers["authorization"] == f"Bearer {PLANTED_KEY}"
    by_id = {m.id: m for m in models}
    sonnet = by_id["anthropic/claude-sonnet-4"]
    assert (sonnet.input_price, sonnet.output_price, sonnet.cached_price) == (3.0, 15.0, 0.3)
    assert (sonnet.context_length, sonnet.max_output_tokens) == (1000000, 64000)
    assert sonnet.capabilities.vision is True
    assert sonnet.capabilities.function_calling is True
    assert sonnet.capabilities.reasoning is True
    assert sonnet.capabilities.structured_outputs is False
    turbo = by_id["openai/gpt-3.5-turbo"]
    assert turbo.capabilities.vision is False  # text-only input modalities
    assert turbo.capabilities.structured_outputs is True
    assert (turbo.input_price, turbo.output_price, turbo.cached_price) == (0.5, 1.5, None)
    assert sonnet.slug == "anthropic/claude-sonnet-4"


async def test_spec_capability_hints_left_undefined_when_the_vendor_does_not_say_openai(
    replay, client
):
    body = {
        "object": "list",
        "data": [
            {"id": "gpt-4o-mini", "object": "model", "created": 1721172741, "owned_by": "system"},
            {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
        ],
    }
    replay.queue(Reply.json(body))
    models = await list_models("openai", client, PLANTED_KEY, replay.url + "/v1")

    assert urlsplit(replay.requests[0].path).path == "/v1/models"
    assert replay.requests[0].headers["authorization"] == f"Bearer {PLANTED_KEY}"
    assert [m.id for m in models] == ["gpt-4o", "gpt-4o-mini"]
    assert models[0].created == 1715367049
    assert models[0].dump() == {
        "id": "gpt-4o",
        "name": "gpt-4o",
        "capabilities": {},
        "iconId": "openai",
        "created": 1715367049,
    }


async def test_anthropic_follows_after_id_until_has_more_is_false(replay, client):
    page1 = {
        "data": [
            {
                "type": "model",
                "id": "claude-opus-4-6",
                "display_name": "Claude Opus 4.6",
                "created_at": "2026-02-05T00:00:00Z",
                "max_input_tokens": 200000,
                "max_tokens": 128000,
                "capabilities": {
                    "image_input": {"supported": True},
                    "structured_outputs": {"supported": True},
                    "thinking": {"supported": True},
                },
            }
        ],
        "has_more": True,
        "first_id": "claude-opus-4-6",
        "last_id": "claude-opus-4-6",
    }
    page2 = {
        "data": [
            {
                "type": "model",
                "id": "claude-3-haiku-20240307",
                "display_name": "Claude Haiku 3",
                "created_at": "2024-03-07T00:00:00Z",
            }
        ],
        "has_more": False,
        "first_id": "claude-3-haiku-20240307",
        "last_id": "claude-3-haiku-20240307",
    }
    replay.queue(Reply.json(page1), Reply.json(page2))
    models = await list_models("anthropic", client, PLANTED_KEY, replay.url + "/v1")

    assert len(replay.requests) == 2
    first, second = replay.requests
    assert first.headers["x-api-key"] == PLANTED_KEY
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "after_id" not in _query(first.path)
    assert _query(second.path)["after_id"] == ["claude-opus-4-6"]
    by_id = {m.id: m for m in models}
    opus = by_id["claude-opus-4-6"]
    assert (opus.name, opus.context_length, opus.max_output_tokens) == (
        "Claude Opus 4.6",
        200000,
        128000,
    )
    assert opus.capabilities.vision is True and opus.capabilities.structured_outputs is True
    haiku = by_id["claude-3-haiku-20240307"]
    assert haiku.capabilities.dump() == {}  # older answers state nothing: nothing assumed
    assert haiku.created == 1709769600


async def test_a_refused_key_is_classified_and_never_echoed(replay, client):
    # OpenAI echoes part of a wrong key in its 401 message; ours is planted whole.
    refusal = {
        "error": {
            "message": f"Incorrect API key provided: {PLANTED_KEY}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    replay.queue(Reply.json(refusal, status=401))
    with pytest.raises(errors.AdapterError) as caught:
        await list_models("openai", client, PLANTED_KEY, replay.url + "/v1")
    assert caught.value.code == errors.AUTHENTICATION
    assert caught.value.status == 401
    assert PLANTED_KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)


async def test_an_unreachable_vendor_is_a_network_error(client):
    with pytest.raises(errors.AdapterError) as caught:
        await list_models("openai", client, PLANTED_KEY, "http://127.0.0.1:9/v1")
    assert caught.value.code == errors.NETWORK


async def test_test_provider_lists_its_scripted_models_without_network(client):
    models = await list_models("test", client, None, test_models=["scripted-b", "scripted-a"])
    assert [m.id for m in models] == ["scripted-a", "scripted-b"]
    assert models[0].input_price == 0.0 and models[0].capabilities.function_calling is True


async def test_spec_get_model_capabilities_answers_from_the_listing(replay, client):
    replay.queue(cassette("openrouter/models_list.yaml")[0].reply())
    caps = await get_model_capabilities(
        "openrouter", client, PLANTED_KEY, "openai/gpt-4o", replay.url + "/api/v1"
    )
    assert caps is not None and caps.vision is True and caps.structured_outputs is True
    replay.queue(cassette("openrouter/models_list.yaml")[0].reply())
    missing = await get_model_capabilities(
        "openrouter", client, PLANTED_KEY, "nobody/none", replay.url + "/api/v1"
    )
    assert missing is None


async def test_models_page_searches_every_word_and_pages(replay, client):
    # The recorded page alone: its nextPageToken dropped so the listing ends there.
    only_page = json.loads(cassette("gemini/models_list.yaml")[0].body)
    del only_page["nextPageToken"]
    replay.queue(Reply.json(only_page))
    models = await list_models("google", client, PLANTED_KEY, replay.url + "/v1beta")
    page = models_page(models, ProviderModelsQuery(search="FLASH lite", per_page=2))
    assert page.total >= 3 and len(page.models) == 2 and page.has_next_page
    assert all("flash" in m.id and "lite" in m.id for m in page.models)
    last = models_page(models, ProviderModelsQuery(search="flash lite", page=99, per_page=2))
    assert last.models == [] and not last.has_next_page
    assert page.dump()["hasNextPage"] is True


async def test_openrouter_endpoints_per_upstream_with_prices_per_million(replay, client):
    # No recording of /models/{id}/endpoints exists: shape from OpenRouter's API reference.
    body = {
        "data": {
            "id": "openai/gpt-4o",
            "name": "OpenAI: GPT-4o",
            "endpoints": [
                {
                    "name": "OpenAI | openai/gpt-4o",
                    "provider_name": "OpenAI",
                    "tag": "openai",
                    "context_length": 128000,
                    "max_completion_tokens": 16384,
                    "pricing": {"prompt": "0.0000025", "completion": "0.00001"},
                    "status": 0,
                    "supported_parameters": ["tools"],
                }
            ],
        }
    }
    replay.queue(Reply.json(body))
    rows = await openrouter_endpoints(client, PLANTED_KEY, "openai/gpt-4o", replay.url + "/api/v1")
    assert urlsplit(replay.requests[0].path).path == "/api/v1/models/openai/gpt-4o/endpoints"
    assert rows[0]["providerName"] == "OpenAI"
    assert (rows[0]["inputPrice"], rows[0]["outputPrice"]) == (2.5, 10.0)


async def test_spec_get_models_page_on_the_lister_follows_the_vendors_pages(replay, client):
    from runtime.providers.discovery import lister

    page1 = {
        "data": [{"type": "model", "id": "claude-b", "display_name": "Claude B"}],
        "has_more": True,
        "last_id": "claude-b",
    }
    page2 = {
        "data": [{"type": "model", "id": "claude-a", "display_name": "Claude A"}],
        "has_more": False,
        "last_id": "claude-a",
    }
    replay.queue(Reply.json(page1), Reply.json(page2))
    anthropic = lister("anthropic", client, replay.url + "/v1")
    page = await anthropic.get_models_page(PLANTED_KEY, ProviderModelsQuery(per_page=1))
    assert len(replay.requests) == 2  # both vendor pages read before paging locally
    assert [m.id for m in page.models] == ["claude-a"] and page.total == 2
    assert page.has_next_page
