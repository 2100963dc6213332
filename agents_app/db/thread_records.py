"""The engine's ``ThreadRecord`` of a thread, read with one fixed statement.

The engine's store reads it (``bridge/store.py``: a thread, a parent's children) and so does
a session start's queue read (``services/sessions/lifecycle.py``), which takes the record with it so
the engine does not read the thread again. One column list, one builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents_app.db.composed import Part, Select
from agents_app.db.raw_sql import db_datetime, db_json, text_uuid
from agents_app.models import Agent, Thread
from runtime.core.progress import ThreadExecutionState
from runtime.store.protocol import ThreadRecord


def record_part(thread_alias: str) -> Part:
    """A thread's engine record as a part of a composed SELECT over the threads table
    aliased ``thread_alias``. The agents' JSON configurations are not read: only names."""
    t = thread_alias
    agents = Agent._meta.db_table
    return Part(
        columns=(
            ("id", f"{t}.id"),
            ("agent", "record_agent.name"),
            ("origin", "record_origin.name"),
            ("owner", f"{t}.owner_id"),
            ("parent", f"{t}.parent_id"),
            ("tags", f"{t}.tags"),
            ("created_at", f"{t}.created_at"),
            ("stopped", f"{t}.stopped"),
            ("terminated_at", f"{t}.terminated_at"),
            ("execution_state", f"{t}.execution_state"),
            ("display_name", f"{t}.display_name"),
            ("relationship", f"{t}.relationship"),
            ("child_status", f"{t}.child_status"),
            ("subagent", f"{t}.subagent_config"),
        ),
        joins=(
            f"JOIN {agents} record_agent ON record_agent.id = {t}.agent_id",
            f"JOIN {agents} record_origin ON record_origin.id = {t}.origin_agent_id",
        ),
    )


RECORD = Select(Thread._meta.db_table, "t", {"record": record_part("t")}, "WHERE t.id = %s")
CHILDREN = Select(
    Thread._meta.db_table,
    "t",
    {"record": record_part("t")},
    "WHERE t.parent_id = %s ORDER BY t.created_at, t.id",
)


def record_of(values: Mapping[str, Any]) -> ThreadRecord:
    """The record from ``record_part``'s values."""
    created_at = db_datetime(values["created_at"])
    return ThreadRecord(
        id=text_uuid(values["id"]) or "",
        agent_name=values["agent"],
        origin_agent_name=values["origin"],
        user_id=str(values["owner"]) if values["owner"] else None,
        parent_id=text_uuid(values["parent"]),
        tags=list(db_json(values["tags"]) or []),
        created_at=int(created_at.timestamp() * 1_000_000) if created_at else 0,
        stopped=bool(values["stopped"]),
        terminated=values["terminated_at"] is not None,
        execution_state=ThreadExecutionState.model_validate(
            db_json(values["execution_state"]) or {}
        ),
        display_name=values["display_name"],
        relationship=values["relationship"],
        child_status=values["child_status"],
        subagent=db_json(values["subagent"]),
    )


def record_from(select: Select, row: Sequence[Any]) -> ThreadRecord:
    """The record of a row of ``select`` (a composed SELECT with a ``record`` part)."""
    return record_of(select.read(row)["record"])
