"""``/api/openapi.json`` is built once per process (agents_app/api/openapi_cache.py): django-ninja
built it from every route's models at each request, 0.65 s of CPU for a public URL."""

from __future__ import annotations

from typing import Any
from unittest import mock

import ninja.main
import pytest

from agents_app.api import api
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def test_the_openapi_document_is_built_once_and_is_the_one_a_fresh_build_gives(
    anonymous: Any,
) -> None:
    api.clear()
    with mock.patch.object(ninja.main, "get_schema", wraps=ninja.main.get_schema) as build:
        first = anonymous.get("/api/openapi.json")
        second = anonymous.get("/api/openapi.json")
    assert first.status_code == second.status_code == 200
    assert build.call_count == 1
    assert first.content == second.content
    api.clear()
    assert anonymous.get("/api/openapi.json").json() == first.json()
