"""A transactional test leaves its connection to the next one only when it is clean
(``tests/kept_connections.py``): two of Django's own ``TransactionTestCase`` tests in a row
talk to the same PostgreSQL process, and what is not clean is not kept."""

from __future__ import annotations

import io
import unittest
from collections.abc import Callable

import pytest
from django.db import OperationalError, connection, transaction
from django.test import TransactionTestCase

from agents_app.base import faults
from tests.kept_connections import reusable, settle_all

pytestmark = [
    pytest.mark.postgresql("keeps PostgreSQL connections; SQLite's are files"),
    pytest.mark.django_db(transaction=True),  # the test database, as the two tests need it
]


def _backends_of_two_tests(first: Callable[[], None]) -> list[int]:
    """Run two transactional tests in a row (``first`` at the end of the first one); the
    server process id each one's connection had."""
    pids: list[int] = []

    class Two(TransactionTestCase):
        def test_1(self) -> None:
            pids.append(_pid())
            first()

        def test_2(self) -> None:
            pids.append(_pid())

    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Two)
    result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)
    assert result.wasSuccessful(), "".join(e for _, e in result.errors + result.failures)
    return pids


def _pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_a_clean_connection_serves_the_next_transactional_test() -> None:
    first, second = _backends_of_two_tests(lambda: None)
    assert first == second


def test_only_a_clean_connection_is_reusable() -> None:
    connection.ensure_connection()
    assert reusable(connection)
    with transaction.atomic():
        assert not reusable(connection)
    connection.connection.execute("BEGIN")  # a transaction behind Django's back
    assert not reusable(connection)
    connection.connection.execute("ROLLBACK")
    assert reusable(connection)
    faults._terminate("a test", _pid())  # the project's own kill: waits until it is gone
    with pytest.raises(OperationalError):
        _pid()
    assert not reusable(connection)
    settle_all()
    assert connection.connection is None  # the next use opens a new one
    assert _pid()
