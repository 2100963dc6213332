"""Which OpenAI API a model uses: new OpenAI models (studio form, definition-write API) get
Responses when their author picks none; stored and imported models without ``api`` keep
Chat Completions; non-OpenAI models never get one."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import LanguageModel
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import ModelDefinition
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import as_  # noqa: F401 (fixture)

ADD = reverse("admin:agents_app_languagemodel_add")
pytestmark = pytest.mark.django_db


def _add(client: Client, **fields: Any) -> Any:
    data = fill(read_form(client, ADD), name="m", model="gpt-5", **fields)
    return post(client, ADD, data)


def test_a_new_openai_model_in_the_studio_defaults_to_responses(client: Client, ops: Any) -> None:
    client.force_login(ops)
    response = _add(client, provider="openai")
    assert response.status_code == 302, errors_of(response)
    assert LanguageModel.objects.get(name="m").api == "responses"


def test_the_studio_keeps_an_explicit_chat_choice(client: Client, ops: Any) -> None:
    client.force_login(ops)
    response = _add(client, provider="openai", api="chat")
    assert response.status_code == 302, errors_of(response)
    assert LanguageModel.objects.get(name="m").api == "chat"


def test_an_anthropic_model_gets_no_api(client: Client, ops: Any) -> None:
    client.force_login(ops)
    response = _add(client, provider="anthropic")
    assert response.status_code == 302, errors_of(response)
    assert LanguageModel.objects.get(name="m").api == ""


def test_editing_a_stored_model_without_api_keeps_chat(client: Client, ops: Any) -> None:
    client.force_login(ops)
    model = LanguageModel.objects.create(name="old", provider="openai", model="gpt-4o")
    url = reverse("admin:agents_app_languagemodel_change", args=[model.pk])
    response = post(client, url, fill(read_form(client, url), input_price="1"))
    assert response.status_code == 302, errors_of(response)
    model.refresh_from_db()
    assert model.api == ""


def test_the_definition_api_creates_openai_models_on_responses(as_: Any, ops: Any) -> None:  # noqa: F811
    client = as_(ops)
    created = client.post_json("/api/models", {"name": "n", "provider": "openai", "model": "gpt-5"})
    assert created.status_code in (200, 201), created.content
    assert LanguageModel.objects.get(name="n").api == "responses"
    chat = {"name": "c", "provider": "openai", "model": "gpt-4o", "api": "chat"}
    assert client.post_json("/api/models", chat).status_code in (200, 201)
    assert LanguageModel.objects.get(name="c").api == "chat"


def test_an_imported_definition_without_api_keeps_chat() -> None:
    save_definitions([("models/i", ModelDefinition(name="i", provider="openai", model="gpt-4o"))])
    assert LanguageModel.objects.get(name="i").api == ""


def test_the_form_says_what_no_choice_means(client: Client, ops: Any) -> None:
    client.force_login(ops)
    assert "Default (Responses)" in client.get(ADD).content.decode()
    model = LanguageModel.objects.create(name="old", provider="openai", model="gpt-4o")
    page = client.get(reverse("admin:agents_app_languagemodel_change", args=[model.pk]))
    assert "Default (Chat Completions)" in page.content.decode()


def test_a_new_search_preview_model_stays_on_chat(client: Client, ops: Any) -> None:
    client.force_login(ops)
    data = fill(read_form(client, ADD), name="s", model="gpt-4o-mini-search-preview")
    response = post(client, ADD, fill(data, provider="openai"))
    assert response.status_code == 302, errors_of(response)
    assert LanguageModel.objects.get(name="s").api == "chat"
