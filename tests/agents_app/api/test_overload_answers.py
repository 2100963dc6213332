"""A database that cannot answer (a real lock held by another connection, met with a real
``lock_timeout``) gives 503 with ``Retry-After``: JSON for API and JSON clients, plain text for
a browser page, never Django's HTML 500 page.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client

from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def table_locked(table: str) -> Iterator[None]:
    """``table`` locked by another connection; this one gives up after 200 ms."""
    params = connection.get_connection_params()
    keys = ("dbname", "host", "port", "user", "password")
    other = psycopg.connect(**{k: params[k] for k in keys if params.get(k)})
    try:
        other.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")
        yield
    finally:
        other.rollback()
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


def _is_json_503(response: Any) -> bool:
    return (
        response.status_code == 503
        and response["Content-Type"].startswith("application/json")
        and "temporarily unavailable" in response.json()["error"]
        and int(response["Retry-After"]) > 0
    )


def test_api_request_while_the_database_cannot_answer_is_a_json_503(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    with table_locked("agents_app_thread"):
        listing = client.get("/api/threads")
        post = client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "hi"})
    assert _is_json_503(listing), listing.content
    assert _is_json_503(post), post.content


def test_page_outside_the_api_while_the_database_cannot_answer_is_a_503_not_html(
    alice: Any,
) -> None:
    client = Client()
    client.force_login(alice)
    with table_locked("django_session"):
        for_json = client.get("/chat/", HTTP_ACCEPT="application/json")
        for_browser = client.get("/chat/", HTTP_ACCEPT="text/html")
    assert _is_json_503(for_json), for_json.content
    assert for_browser.status_code == 503
    assert for_browser["Content-Type"].startswith("text/plain")
    assert int(for_browser["Retry-After"]) > 0
