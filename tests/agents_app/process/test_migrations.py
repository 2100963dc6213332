"""Migrations apply cleanly on both supported databases, and models match them."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.agents_app.process.manage_support import manage as _manage

# Each test runs manage.py in a process of its own.
pytestmark = pytest.mark.integration

POSTGRES_ADMIN_URL = os.environ.get(
    "MIGRATION_CHECK_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/postgres"
)


def test_models_have_no_unmigrated_changes() -> None:
    result = _manage("makemigrations", "--check", "--dry-run", database_url="sqlite:///:memory:")
    assert result.returncode == 0, result.stdout + result.stderr


def test_migrations_apply_on_sqlite_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "fresh.sqlite3"
    result = _manage("migrate", "--noinput", database_url=f"sqlite:///{db}")
    assert result.returncode == 0, result.stderr
    con = sqlite3.connect(db)
    tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    journal = con.execute("pragma journal_mode").fetchone()[0]
    con.close()
    assert {
        "agents_app_agent",
        "agents_app_message",
        "agents_app_scheduledeffect",
        "agents_app_envvalue",
    } <= tables
    assert journal == "wal"


@pytest.fixture
def fresh_postgres_db() -> Iterator[str]:
    name = f"migcheck_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_migrations_apply_on_postgres_and_roll_back(fresh_postgres_db: str) -> None:
    result = _manage("migrate", "--noinput", database_url=fresh_postgres_db)
    assert result.returncode == 0, result.stderr
    with psycopg.connect(fresh_postgres_db) as con:
        indexes = {
            r[0]
            for r in con.execute(
                "select indexname from pg_indexes where tablename like 'agents_app_%'"
            )
        }
    # The hot-path indexes the data model promises.
    assert {"uniq_message_thread_time", "effect_due_pending", "thread_owner_activity"} <= indexes
    back = _manage("migrate", "agents_app", "zero", "--noinput", database_url=fresh_postgres_db)
    assert back.returncode == 0, back.stderr
