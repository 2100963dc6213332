"""Rows read as plain SQL made into model instances (``raw_sql.model_from_row``): the same
values the ORM gives, with the converters each model's fields need worked out once per
connection (issue #58), not asked for at every field of every row."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, connections

from agents_app.db import raw_sql
from agents_app.db.raw_sql import model_columns, model_from_row
from agents_app.models import Agent, Thread
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)


def _row(thread: Thread) -> tuple[Any, ...]:
    sql = f"SELECT {', '.join(model_columns(Thread, 't'))} FROM {Thread._meta.db_table} t WHERE t.id = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [thread.pk])
        return cursor.fetchone()  # type: ignore[no-any-return]


@pytest.mark.django_db
def test_a_row_becomes_the_instance_the_orm_reads(alice: Any, thread_of: Any) -> None:
    made = thread_of(alice, tags=["blue"])
    stored = Thread.objects.get(pk=made.pk)
    built = model_from_row(Thread, _row(made))
    for field in Thread._meta.concrete_fields:
        assert getattr(built, field.attname) == getattr(stored, field.attname), field.name
    assert built.tags == ["blue"]  # a JSON column: converted from the driver's text
    assert built._state.adding is False and built._state.db == "default"


@pytest.mark.django_db
def test_a_row_of_the_wrong_width_is_refused(alice: Any, thread_of: Any) -> None:
    row = _row(thread_of(alice))
    with pytest.raises(ValueError, match="Thread: .* values for its concrete fields"):
        model_from_row(Thread, row[:-1])


@pytest.mark.django_db(transaction=True)
def test_converters_are_worked_out_per_connection(alice: Any, thread_of: Any) -> None:
    row = _row(thread_of(alice))
    model_from_row(Thread, row)
    here = connections["default"]
    assert Thread in raw_sql._CONVERTERS[here]
    seen: list[Any] = []

    def elsewhere() -> None:  # another thread has a connection (and operations) of its own
        try:
            model_from_row(Thread, row)
            seen.append(connections["default"])
        finally:
            connections.close_all()

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join(10)
    assert seen and seen[0] is not here
    assert Thread in raw_sql._CONVERTERS[seen[0]]


def test_a_column_named_for_a_keyword_reads_on_every_database(thread_of: Any, alice: Any) -> None:
    """The agent's ``primary`` is a keyword SQLite refuses bare (``near "primary": syntax
    error`` for every thread creation of an embedded server, caught by test_embedded):
    ``model_select`` quotes every column as both databases quote."""
    agent = thread_of(alice).agent
    assert 'a."primary"' in raw_sql.model_select(Agent, "a")
    with raw_sql.prepared_cursor() as cursor:
        cursor.execute(f"{raw_sql.model_select(Agent, 'a')} WHERE a.id = %s", [agent.pk])
        row = cursor.fetchone()
    assert model_from_row(Agent, row).name == agent.name
