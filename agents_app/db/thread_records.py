"""The engine's ``ThreadRecord`` of a thread, read with one fixed statement.

The engine's store reads it (``bridge/store.py``: a thread, a parent's children) and so does
a session start's queue read (``services/sessions.py``), which takes the record with it so
the engine does not read the thread again. One column list, one builder.
"""

from __future__ import annotations

from typing import Any

from agents_app.db.raw_sql import db_datetime, db_json, text_uuid
from agents_app.models import Agent, Thread
from runtime.core.progress import ThreadExecutionState
from runtime.store.protocol import ThreadRecord

# The agents' JSON configurations are not needed for a record: only their names.
RECORD_FROM = (
    "SELECT t.id, a.name, o.name, t.owner_id, t.parent_id, t.tags, t.created_at, t.stopped, "
    "t.terminated_at, t.execution_state, t.display_name, t.relationship, t.child_status, "
    "t.subagent_config{more} "
    f"FROM {Thread._meta.db_table} t "
    f"JOIN {Agent._meta.db_table} a ON a.id = t.agent_id "
    f"JOIN {Agent._meta.db_table} o ON o.id = t.origin_agent_id"
)
RECORD_WIDTH = 14  # the record's columns, first in every row of ``RECORD_FROM``
RECORD_SQL = RECORD_FROM.format(more="") + " WHERE t.id = %s"
CHILDREN_SQL = RECORD_FROM.format(more="") + " WHERE t.parent_id = %s ORDER BY t.created_at, t.id"


def record_of(row: tuple[Any, ...]) -> ThreadRecord:
    """The record from the first ``RECORD_WIDTH`` columns of ``row``."""
    (id_, agent, origin, owner, parent, tags, created, stopped, terminated, state) = row[:10]
    created_at = db_datetime(created)
    return ThreadRecord(
        id=text_uuid(id_) or "",
        agent_name=agent,
        origin_agent_name=origin,
        user_id=str(owner) if owner else None,
        parent_id=text_uuid(parent),
        tags=list(db_json(tags) or []),
        created_at=int(created_at.timestamp() * 1_000_000) if created_at else 0,
        stopped=bool(stopped),
        terminated=terminated is not None,
        execution_state=ThreadExecutionState.model_validate(db_json(state) or {}),
        display_name=row[10],
        relationship=row[11],
        child_status=row[12],
        subagent=db_json(row[13]),
    )
