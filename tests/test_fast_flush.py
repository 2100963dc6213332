"""The suite's flush between transactional tests (``tests/fast_flush.py``): Django still
calls it, and it empties every table, the append-only audit log and rows joined by foreign
keys included, but the content types and permissions migrations made, which it keeps."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.models import AuditEvent
from tests.fast_flush import KEPT


@pytest.mark.django_db(transaction=True)
def test_flush_empties_every_table_with_deletes_on_postgresql(alice: Any) -> None:
    kept_before = _counts(KEPT)
    group = Group.objects.create(name="reviewers")
    alice.groups.add(group)  # a row that references two others
    AuditEvent.objects.create(
        actor_kind="system",
        actor="suite",
        action="created",
        target_type="user",
        target_id=str(alice.pk),
        target="alice",
    )
    with CaptureQueriesContext(connection) as seen:
        # As TransactionTestCase calls it after each test (it asks for post_migrate).
        call_command(
            "flush",
            verbosity=0,
            interactive=False,
            reset_sequences=False,
            inhibit_post_migrate=False,
        )
    statements = " ".join(query["sql"] for query in seen.captured_queries)
    if connection.vendor == "postgresql":
        assert "DELETE FROM" in statements and "TRUNCATE" not in statements
        # post_migrate's receivers read content types and permissions: none ran.
        assert "django_content_type" not in statements.replace("DELETE FROM", "")
        assert 'FROM "auth_permission"' not in statements
    rows = _counts(connection.introspection.django_table_names(only_existing=True))
    if connection.vendor == "postgresql":
        # Kept as migrations made them (the flush's post_migrate only reads them then).
        assert {t: rows.pop(t) for t in KEPT} == kept_before and all(kept_before.values())
    assert not {table: n for table, n in rows.items() if n}, rows


def _counts(tables: Any) -> dict[str, int]:
    with connection.cursor() as cursor:
        rows = {}
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            rows[table] = cursor.fetchone()[0]
    return rows
