"""Whatever is typed into a studio form, the answer is a page with errors, never a server error."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import LanguageModel, Prompt
from tests.agents_app.admin.admin_pages import fill, post, read_form, set_rows
from tests.plain_templates import plain_templates

pytestmark = [pytest.mark.django_db, pytest.mark.sweep]
# Missing, too large for any number column, too long for any text column, a null byte
# (PostgreSQL refuses those in text), and JSON whose escapes spell a lone surrogate and a
# NUL (valid JSON, but not storable once parsed, e.g. by a model's script field).
NASTY = ["", "9" * 40, "x" * 3000, "\x00", '["\\ud800"]', '{"a": "\\u0000"}']


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _form(client: Client, name: str) -> tuple[str, dict[str, Any]]:
    """The add form of ``name``, filled so that it saves, with a row in each inline."""
    model = LanguageModel.objects.create(name="gpt", provider="test", model="x")
    prompt = Prompt.objects.create(name="p", model=model, text="hi")
    url = reverse(f"admin:agents_app_{name}_add")
    data = read_form(client, url)
    if name == "languagemodel":
        fill(data, name="m2", model="x")
        set_rows(data, "fallback_links", [{"fallback": model.pk}])
    elif name == "prompt":
        fill(data, name="p2", model=model.pk)
        set_rows(data, "parts", [{"type": "include", "include": prompt.pk}])
        set_rows(data, "tool_entries", [{"name": "p", "resumable": True}])
        set_rows(data, "env_values", [{"key": "K", "value_input": "v"}])
    elif name == "agent":
        fill(data, name="a2", side_a_prompt=prompt.pk)
    else:
        fill(data, key="K2", value_input="v")
    return url, data


# One test per form (each posts a few hundred times), so no single one nears the suite's
# per-test timeout on a loaded machine and the workers share them.
@pytest.mark.parametrize("name", ["languagemodel", "prompt", "agent", "envvalue"])
def test_no_input_makes_a_studio_form_fail_with_a_server_error(staff: Client, name: str) -> None:
    url, data = _form(staff, name)
    fields = [
        k
        for k in data
        if "__prefix__" not in k and not k.endswith("FORMS") and k != "csrfmiddlewaretoken"
    ]
    assert len(fields) >= 5, fields
    with plain_templates():  # only the status is read
        for field in fields:
            for value in NASTY:
                response = post(staff, url, {**data, field: value})
                assert response.status_code in (200, 302), (url, field, value)
