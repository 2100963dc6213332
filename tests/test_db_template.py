"""The unit-test database is a copy of the migrated template (``tests/db_template.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.db_template import _same_server

ADMIN = "postgresql://root@127.0.0.1:5432/postgres"
POSTGRES = "django.db.backends.postgresql"


@pytest.mark.parametrize(
    ("settings", "same"),
    [
        ({"ENGINE": POSTGRES, "HOST": "127.0.0.1", "PORT": 5432}, True),
        ({"ENGINE": POSTGRES, "HOST": "127.0.0.1", "PORT": ""}, True),
        ({"ENGINE": POSTGRES, "HOST": "db.example", "PORT": 5432}, False),
        ({"ENGINE": POSTGRES, "HOST": "127.0.0.1", "PORT": 6432}, False),
        ({"ENGINE": "django.db.backends.sqlite3", "HOST": "", "PORT": ""}, False),
    ],
)
def test_only_a_database_on_the_templates_server_is_copied(
    settings: dict[str, Any], same: bool
) -> None:
    assert _same_server(settings, ADMIN) is same


@pytest.mark.django_db
def test_the_test_database_has_every_migration_and_the_post_migrate_rows() -> None:
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    assert ContentType.objects.filter(app_label="agents_app").exists()
    assert Permission.objects.filter(codename="view_thread").exists()
