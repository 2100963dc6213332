"""The prompts page refuses configuration the runtime would ignore: ``provider:`` tools a
model of the chain does not offer and a response schema a model of the chain cannot honour."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from agents_app.models import LanguageModel, ModelFallback, Prompt, PromptTool
from agents_app.services.definitions import rows as definition_services
from tests.agents_app.admin.admin_pages import errors_of, post, read_form, set_rows
from tests.agents_app.admin.test_admin_prompts import ADD, add_form, change_url

pytestmark = pytest.mark.django_db
SCHEMA = '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def model() -> LanguageModel:
    return LanguageModel.objects.create(name="gpt", provider="openai", model="gpt-4o-mini")


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        definition_services, "registered_code_names", lambda: ({"lookup_order"}, set())
    )


def test_provider_tool_not_offered_is_refused_at_save_admin(staff: Client) -> None:
    gemini = LanguageModel.objects.create(name="gem", provider="google", model="gemini-2.5-pro")
    data = add_form(staff, gemini)
    set_rows(data, "tool_entries", [{"name": "lookup_order"}, {"name": "provider:web_search"}])

    response = post(staff, ADD, data)

    assert errors_of(response)["tool_entries-1-name"] == [
        "'provider:web_search' is not offered by provider 'google' for model 'gem'. Provider "
        "tools it offers: provider:google_search, provider:code_execution. Remove it or choose "
        "another model."
    ]
    assert not Prompt.objects.exists() and not PromptTool.objects.exists()


def test_provider_tool_not_offered_is_refused_at_save_admin_for_each_fallback(
    staff: Client,
) -> None:
    claude = LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    gemini = LanguageModel.objects.create(name="gem", provider="google", model="g")
    ModelFallback.objects.create(model=claude, fallback=gemini, position=0)
    data = add_form(staff, claude)
    set_rows(data, "tool_entries", [{"name": "provider:web_search"}])

    messages = errors_of(post(staff, ADD, data))["tool_entries-0-name"]

    # Claude runs web_search; its fallback Gemini does not, so the prompt is refused.
    assert len(messages) == 1
    assert "provider 'google' for model 'gem'" in messages[0]
    assert not Prompt.objects.exists()


def test_provider_tool_with_options_is_saved_when_every_model_offers_it(staff: Client) -> None:
    claude = LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    data = add_form(staff, claude)
    set_rows(data, "tool_entries", [{"name": "provider:web_search"}])

    response = post(staff, ADD, data)

    assert response.status_code == 302, errors_of(response)
    assert Prompt.objects.get().tool_entries.get().name == "provider:web_search"


def test_a_response_schema_is_saved_and_shown_again(staff: Client, model: Any) -> None:
    model.capabilities = {"structuredOutputs": True}
    model.save()

    response = post(staff, ADD, add_form(staff, model, response_schema=SCHEMA))

    assert response.status_code == 302, errors_of(response)
    saved = Prompt.objects.get()
    assert saved.response_schema["required"] == ["city"]
    shown = read_form(staff, change_url(saved))["response_schema"]
    assert json.loads(shown) == json.loads(SCHEMA)


def test_spec_response_schema_refused_at_save_when_the_model_has_no_structured_outputs(
    staff: Client, model: Any
) -> None:
    model.capabilities = {"structuredOutputs": False}
    model.save()

    response = post(staff, ADD, add_form(staff, model, response_schema=SCHEMA))

    assert errors_of(response)["response_schema"] == [
        "Model 'gpt' (provider 'openai') cannot answer with structured output: its "
        "capabilities say structured outputs are not supported. Choose another model or "
        "remove the response schema."
    ]
    assert not Prompt.objects.exists()


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ('{"type": "object", "properties": {"a": {"type": "strnig"}}}', "not a valid JSON Schema"),
        ('{"type": "array", "items": {"type": "string"}}', "must describe an object"),
    ],
)
def test_spec_an_invalid_response_schema_is_refused_at_save_admin(
    staff: Client, model: Any, schema: str, expected: str
) -> None:
    response = post(staff, ADD, add_form(staff, model, response_schema=schema))

    assert any(expected in m for m in errors_of(response)["response_schema"])
    assert not Prompt.objects.exists()


def test_provider_tool_options_are_checked_against_the_offer_admin(staff: Client) -> None:
    claude = LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    data = add_form(staff, claude)
    set_rows(
        data,
        "tool_entries",
        [{"name": "provider:web_search", "options": '{"max_uses": 0, "safe_search": true}'}],
    )

    found = errors_of(post(staff, ADD, data))

    messages = [m for ms in found.values() for m in ms]
    assert any("max_uses: 0 is less than the minimum of 1" in m for m in messages), found
    assert any("'safe_search' was unexpected" in m for m in messages), found
    assert all("Options of 'provider:web_search'" in m for m in messages if "max_uses" in m)
    assert not Prompt.objects.exists()


def test_provider_tool_options_are_saved_and_shown_again(staff: Client) -> None:
    claude = LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    data = add_form(staff, claude)
    options = {"max_uses": 2, "allowed_domains": ["example.com"]}
    set_rows(
        data, "tool_entries", [{"name": "provider:web_search", "options": json.dumps(options)}]
    )

    response = post(staff, ADD, data)

    assert response.status_code == 302, errors_of(response)
    assert Prompt.objects.get().tool_entries.get().options == options
    saved = definition_services.prompt_definition(Prompt.objects.get())
    assert saved.dump()["tools"] == [{"name": "provider:web_search", "options": options}]


def test_the_tool_picker_suggests_the_provider_tools_of_stored_models(staff: Client) -> None:
    LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    LanguageModel.objects.create(name="or", provider="openrouter", model="x")

    body = staff.get(ADD).content.decode()

    assert "provider:web_search" in body and "provider tool (anthropic, openrouter)" in body
    assert "provider:code_execution" in body
    assert "provider:google_search" not in body  # no Gemini model is stored
