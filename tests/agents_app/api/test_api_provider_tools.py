"""Provider tools over the API: ``GET /api/providers/{name}/tools`` (the reference's
``getTools`` shape plus our options schema) and the save-time rule on ``POST /api/prompts``
(a ``provider:`` tool every model of the chain must offer, options checked)."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.models import LanguageModel, ModelFallback, Prompt
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def test_provider_tools_are_listed_with_their_options(as_: Any, ops: Any) -> None:
    tools = as_(ops).get("/api/providers/anthropic/tools?model=claude-sonnet-4-5").json()["tools"]
    assert [t["name"] for t in tools] == ["web_search", "code_execution"]
    search = tools[0]
    assert search["tenvs"] == [] and search["description"]
    assert set(search["options_schema"]["properties"]) == {
        "max_uses",
        "allowed_domains",
        "blocked_domains",
        "user_location",
    }
    google = as_(ops).get("/api/providers/google/tools").json()["tools"]
    assert [t["name"] for t in google] == ["google_search", "code_execution"]
    assert as_(ops).get("/api/providers/test/tools").json() == {"tools": []}


def test_provider_tools_of_a_model_definition_follow_its_provider_tools(as_: Any, ops: Any) -> None:
    LanguageModel.objects.create(
        name="claude", provider="anthropic", model="c", provider_tools=["web_search"]
    )
    tools = as_(ops).get("/api/providers/anthropic/tools?model=claude").json()["tools"]
    assert [t["name"] for t in tools] == ["web_search"]
    wrong = as_(ops).get("/api/providers/google/tools?model=claude")
    assert wrong.status_code == 400
    assert "served by provider 'anthropic'" in wrong.json()["error"]


def test_provider_tools_errors_are_json(as_: Any, alice: Any, ops: Any) -> None:
    missing = as_(ops).get("/api/providers/nope/tools")
    assert missing.status_code == 404 and missing.json() == {"error": "Provider not found: nope"}
    assert as_(alice).get("/api/providers/anthropic/tools").status_code == 403


def test_provider_tool_not_offered_is_refused_at_save_api(as_: Any, ops: Any) -> None:
    claude = LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    gemini = LanguageModel.objects.create(name="gem", provider="google", model="g")
    ModelFallback.objects.create(model=claude, fallback=gemini, position=0)

    refused = as_(ops).post_json(
        "/api/prompts",
        {"name": "searcher", "model": "claude", "prompt": "x", "tools": ["provider:web_search"]},
    )

    assert refused.status_code == 400
    assert refused.json()["fieldErrors"]["tools.0"] == (
        "'provider:web_search' is not offered by provider 'google' for model 'gem'. Provider "
        "tools it offers: provider:google_search, provider:code_execution. Remove it or choose "
        "another model."
    )
    assert not Prompt.objects.exists()


def test_provider_tool_options_are_checked_and_saved_api(as_: Any, ops: Any) -> None:
    LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    entry = {"name": "provider:web_search", "options": {"allowed_domains": "example.com"}}
    body = {"name": "searcher", "model": "claude", "prompt": "x", "tools": [entry]}

    refused = as_(ops).post_json("/api/prompts", body)

    assert refused.status_code == 400
    assert "allowed_domains: 'example.com' is not of type 'array'" in str(
        refused.json()["fieldErrors"]
    )
    entry["options"] = {"allowed_domains": ["example.com"], "max_uses": 2}
    saved = as_(ops).post_json("/api/prompts", body)
    assert saved.status_code == 201, saved.json()
    assert Prompt.objects.get().tool_entries.get().options == entry["options"]


def test_options_on_a_tool_that_is_not_a_provider_tool_are_refused(as_: Any, ops: Any) -> None:
    LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    body = {
        "name": "searcher",
        "model": "claude",
        "prompt": "x",
        "tools": [{"name": "helper", "options": {"a": 1}}],
    }
    refused = as_(ops).post_json("/api/prompts", body)
    assert refused.status_code == 400
    assert "Options apply only to provider tools" in str(refused.json()["fieldErrors"])
