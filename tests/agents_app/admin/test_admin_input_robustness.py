"""Whatever is typed into a studio form, the answer is a page with errors, never a server error."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import LanguageModel, Prompt
from tests.agents_app.admin.admin_pages import fill, post, read_form, set_rows

pytestmark = pytest.mark.django_db
# Missing, too large for any number column, too long for any text column, a null byte
# (PostgreSQL refuses those in text), and JSON whose escapes spell a lone surrogate and a
# NUL (valid JSON, but not storable once parsed, e.g. by a model's script field).
NASTY = ["", "9" * 40, "x" * 3000, "\x00", '["\\ud800"]', '{"a": "\\u0000"}']


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _forms(client: Client) -> list[tuple[str, dict[str, Any]]]:
    model = LanguageModel.objects.create(name="gpt", provider="test", model="x")
    prompt = Prompt.objects.create(name="p", model=model, text="hi")
    pages = []
    url = reverse("admin:agents_app_languagemodel_add")
    pages.append(
        (
            url,
            set_rows(
                fill(read_form(client, url), name="m2", model="x"),
                "fallback_links",
                [{"fallback": model.pk}],
            ),
        )
    )
    url = reverse("admin:agents_app_prompt_add")
    data = fill(read_form(client, url), name="p2", model=model.pk)
    set_rows(data, "parts", [{"type": "include", "include": prompt.pk}])
    set_rows(data, "tool_entries", [{"name": "p", "resumable": True}])
    pages.append((url, set_rows(data, "env_values", [{"key": "K", "value_input": "v"}])))
    url = reverse("admin:agents_app_agent_add")
    pages.append((url, fill(read_form(client, url), name="a2", side_a_prompt=prompt.pk)))
    url = reverse("admin:agents_app_envvalue_add")
    pages.append((url, fill(read_form(client, url), key="K2", value_input="v")))
    return pages


def test_no_input_makes_a_studio_form_fail_with_a_server_error(staff: Client) -> None:
    for url, data in _forms(staff):
        fields = [
            k
            for k in data
            if "__prefix__" not in k and not k.endswith("FORMS") and k != "csrfmiddlewaretoken"
        ]
        for field in fields:
            for value in NASTY:
                response = post(staff, url, {**data, field: value})
                assert response.status_code in (200, 302), (url, field, value)
