"""Each unit-test database is a copy of a migrated template, not migrated from zero.

pytest-django creates the test database (``test_<name>``, ``test_<name>_gw<N>`` under xdist)
and runs every migration into it: 14 s of a one-file run on this 2-core machine, paid again
by each xdist worker at the same time as the other. The integration stacks already keep a
migrated template (``tests/integration/stack.py``: named for a hash of the migrations, built
once under an advisory lock, kept across runs); the test database is now
``CREATE DATABASE … TEMPLATE`` of that one (well under a second), and pytest-django is told
to keep it (``keepdb``) so its ``migrate`` only checks that nothing is left to apply and runs
the ``post_migrate`` handlers over rows that are already there. The copy is dropped at the
end of the session, as pytest-django would drop its own.

Only where the test database lives on the server the templates are built on
(``TEST_PG_ADMIN_URL``, by default the local PostgreSQL); SQLite, another server,
``--reuse-db`` and ``--create-db`` keep pytest-django's own way.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import psycopg


def _same_server(settings: dict[str, Any], admin_url: str) -> bool:
    admin = urlsplit(admin_url)
    host = settings.get("HOST") or "localhost"
    return (
        "postgresql" in settings["ENGINE"]
        and host == admin.hostname
        and int(settings.get("PORT") or 5432) == (admin.port or 5432)
    )


def clone_test_database(connection: Any) -> str | None:
    """Create ``connection``'s test database as a copy of the migrated template; its name, or
    None where the template cannot serve (another engine or server: pytest-django creates
    and migrates it as before)."""
    from tests.integration import stack

    if not _same_server(connection.settings_dict, stack.PG_ADMIN_URL):
        return None
    name = connection.creation._get_test_db_name()
    env = {**os.environ, "PYTHONPATH": str(stack.ROOT)}
    for attempt in range(3):
        template = stack.migrated_template(env)
        with psycopg.connect(stack.PG_ADMIN_URL, autocommit=True) as admin:
            # What pytest-django does with a database of that name left by an earlier run.
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            try:
                admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                return name
            except psycopg.errors.InvalidCatalogName:
                # Dropped as stale by a run of a newer checkout: built again next round.
                if attempt == 2:
                    raise
    return None


def drop_test_database(name: str) -> None:
    from tests.integration import stack

    with psycopg.connect(stack.PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
