"""The PostgreSQL connection option that lets the start path's statements stay prepared.

PostgreSQL plans every statement it is sent unprepared: that was most of the database's CPU
per conversation start (5.4 of 7.3 ms at 200 starts at once, pg_stat_statements over
``bench/service_bench.py``, issue #58). psycopg prepares a statement once a connection has
run it ``prepare_threshold`` times, but only for cursors that bind parameters on the server:
Django's own cursors bind on the client and are never prepared (the ORM's SQL is unchanged),
and the start path's statements run on ``agents_app.db.raw_sql.prepared_cursor``. A pooler
that cannot carry prepared statements across server connections (``DB_SERVER_PREPARE``
false) gets no threshold: psycopg then prepares nothing.
"""

from __future__ import annotations

from typing import Any


def prepared_options(*, server_prepare: bool, threshold: int = 5) -> dict[str, Any]:
    """Django ``OPTIONS`` for the PostgreSQL backend: psycopg's ``prepare_threshold``
    unless preparing is off."""
    if threshold < 0:
        raise ValueError(f"DB_PREPARE_THRESHOLD must be 0 or more, not {threshold}")
    return {"prepare_threshold": threshold} if server_prepare else {}
