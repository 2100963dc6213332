"""``raw_sql.server_bound``: the ORM's statements inside bind on the server (so PostgreSQL
keeps their plans once prepared), give what they give outside, and the connection binds on
the client again after, whatever happened inside (issue #58)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app import selectors
from agents_app.db.raw_sql import server_bound
from agents_app.models import Thread
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's binding"),
]


def _cursor_kind() -> str:
    """The class of the psycopg cursor Django's next ORM cursor is built on."""
    with connection.cursor() as cursor:
        return type(cursor.cursor).__name__


def test_django_s_cursors_follow_the_block_and_go_back_after() -> None:
    # Django builds its cursors with the connection's cursor_factory: if a release stops
    # doing so, the block binds nothing on the server and this fails.
    assert _cursor_kind() == "Cursor"
    with server_bound():
        assert _cursor_kind() == "ServerBindingCursor"
        # The query log still shows each statement with its values (DEBUG, tests).
        with CaptureQueriesContext(connection) as logged:
            Thread.objects.filter(display_name="a name").exists()
        [entry] = logged.captured_queries
        assert entry["sql"] is not None and "'a name'" in entry["sql"], entry
    assert _cursor_kind() == "Cursor"
    assert "uses_server_side_binding" not in connection.features.__dict__ or (
        connection.features.uses_server_side_binding is False
    )
    with pytest.raises(RuntimeError), server_bound():
        raise RuntimeError("a failed read")
    assert _cursor_kind() == "Cursor"


def test_the_orm_reads_the_same_rows_bound_on_the_server(thread_of: Any, alice: Any) -> None:
    thread = thread_of(alice)
    outside = selectors.registry_thread(thread.pk)
    agent_outside = selectors.offered_agent(alice, thread.agent.name)
    with server_bound():
        inside = selectors.registry_thread(thread.pk)
        row = Thread.objects.select_related("agent", "origin_agent").get(pk=thread.pk)
    assert inside == outside and inside is not None
    assert (row.agent.name, row.origin_agent.name, row.owner_id) == (
        thread.agent.name,
        thread.origin_agent.name,
        alice.pk,
    )
    # offered_agent binds on the server itself; its answer is the ORM's.
    assert selectors.offered_agent(alice, thread.agent.name).pk == agent_outside.pk
