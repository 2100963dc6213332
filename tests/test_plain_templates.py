"""``plain_templates`` renders pages exactly as the instrumented renderer does, without the
test client's record of templates and contexts; it fails if a Django release stops keeping
its own renderer where ``setup_test_environment`` saved it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.template.base import Template
from django.test import Client, utils

from tests.plain_templates import django_s_own_render, plain_templates

pytestmark = pytest.mark.django_db


def test_the_test_environment_instruments_rendering_and_keeps_django_s_own() -> None:
    assert Template._render is utils.instrumented_test_render
    own: Any = django_s_own_render()
    assert own is not utils.instrumented_test_render
    assert own.__qualname__ == "Template._render" and own.__module__ == "django.template.base"


def test_a_page_rendered_plainly_is_the_same_page_without_the_record(admin_client: Client) -> None:
    url = "/admin/agents_app/prompt/add/"
    instrumented = admin_client.get(url)
    assert instrumented.status_code == 200 and instrumented.templates
    with plain_templates():
        plain = admin_client.get(url)
    assert Template._render is utils.instrumented_test_render
    assert plain.status_code == 200
    assert plain.context is None and not plain.templates
    assert _without_token(plain.content) == _without_token(instrumented.content)


def _without_token(page: bytes) -> bytes:
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", page)
