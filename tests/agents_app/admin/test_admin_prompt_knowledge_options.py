"""The prompt page keeps a knowledge base's retrieval options and ``memory:person``, and
refuses what the engine would ignore (docs/knowledge.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from agents_app.models import KnowledgeBase, LanguageModel, Prompt
from agents_app.services.definitions import rows as definition_services
from tests.agents_app.admin.admin_pages import errors_of, post, set_rows
from tests.agents_app.admin.test_admin_prompts import ADD, add_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_retrieval_options_and_memory_tools_are_saved_from_the_studio_form(staff: Client) -> None:
    model = LanguageModel.objects.create(name="gpt", provider="openai", model="gpt-4o-mini")
    KnowledgeBase.objects.create(name="handbook")
    data = add_form(staff, model)
    retrieve = {"retrieve": {"topK": 3, "maxTokens": 800}}
    set_rows(
        data,
        "tool_entries",
        [
            {"name": "knowledge:handbook", "options": json.dumps(retrieve)},
            {"name": "memory:person"},
        ],
    )
    response = post(staff, ADD, data)
    assert response.status_code == 302, errors_of(response)
    saved = definition_services.prompt_definition(Prompt.objects.get())
    assert saved.dump()["tools"] == [
        {"name": "knowledge:handbook", "options": retrieve},
        "memory:person",
    ]


def test_unknown_retrieval_options_and_memory_forms_are_refused_on_the_form(staff: Client) -> None:
    model = LanguageModel.objects.create(name="gpt", provider="openai", model="gpt-4o-mini")
    KnowledgeBase.objects.create(name="handbook")
    data = add_form(staff, model)
    set_rows(
        data,
        "tool_entries",
        [
            {"name": "knowledge:handbook", "options": json.dumps({"retrieve": {"k": 3}})},
            {"name": "memory:everyone"},
        ],
    )
    response = post(staff, ADD, data)
    assert response.status_code == 200
    errors = json.dumps(errors_of(response))
    assert "retrieve takes topK and maxTokens, not 'k'." in errors
    assert "'memory:everyone' is not a memory tool set: write memory:person" in errors
    assert not Prompt.objects.exists()
