"""The prompts page refuses configuration the runtime would ignore: ``provider:`` tools
(none is built yet) and a response schema a model of the chain cannot honour."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from agents_app.models import LanguageModel, ModelFallback, Prompt, PromptTool
from agents_app.services import definitions as definition_services
from tests.agents_app.admin_pages import errors_of, post, read_form, set_rows
from tests.agents_app.test_admin_prompts import ADD, add_form, change_url

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


def test_provider_tool_not_offered_is_refused_at_save_admin(staff: Client, model: Any) -> None:
    data = add_form(staff, model)
    set_rows(data, "tool_entries", [{"name": "lookup_order"}, {"name": "provider:web_search"}])

    response = post(staff, ADD, data)

    assert errors_of(response)["tool_entries-1-name"] == [
        "'provider:web_search' is not offered by provider 'openai' (model 'gpt'). "
        "Provider tools it offers: none yet in this build. Remove it."
    ]
    assert not Prompt.objects.exists() and not PromptTool.objects.exists()


def test_provider_tool_not_offered_is_refused_at_save_admin_for_each_fallback(
    staff: Client, model: Any
) -> None:
    claude = LanguageModel.objects.create(name="claude", provider="anthropic", model="c")
    ModelFallback.objects.create(model=model, fallback=claude, position=0)
    data = add_form(staff, model)
    set_rows(data, "tool_entries", [{"name": "provider:web_search"}])

    messages = errors_of(post(staff, ADD, data))["tool_entries-0-name"]

    assert any("provider 'openai' (model 'gpt')" in m for m in messages)
    assert any("provider 'anthropic' (model 'claude')" in m for m in messages)
    assert not Prompt.objects.exists()


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
