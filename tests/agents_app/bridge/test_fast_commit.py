"""The one-statement commit stores exactly what the ORM commit stores, for every column."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.forms.models import model_to_dict
from psycopg import _queries as psycopg_queries

from agents_app.bridge import fast_commit, store
from agents_app.models import Log, Message, Thread, ThreadSession
from agents_app.services.definitions.saves import save_definitions
from runtime.core.messages import Message as EngineMessage
from runtime.core.messages import new_id
from runtime.core.progress import SessionProgress
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.store.protocol import Commit, LogRecord, NewThread, ThreadUpdate

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = ModelDefinition(name="m", provider="test", model="scripted")
PROMPT = PromptDefinition(name="p", model="m", prompt="hi")
AGENTS = [AgentDefinition(name=n, side_a=SideConfig(prompt="p")) for n in ("a", "b")]


def _columns(model: Any) -> list[str]:
    return [str(f.column) for f in model._meta.concrete_fields]


def test_rows_are_built_with_exactly_the_tables_columns() -> None:
    thread_id = new_id()
    commit = _commit(thread_id, 0)
    assert list(fast_commit.message_values(thread_id, commit.messages[0])) == _columns(Message)
    assert list(fast_commit.log_values(thread_id, commit.logs[1])) == _columns(Log)
    assert commit.progress is not None
    session = fast_commit.session_values(thread_id, commit.progress)
    assert list(session) == list(fast_commit.SESSION_COLUMNS)
    written = [*fast_commit.SESSION_COLUMNS, "owner", "error", "created_at"]
    required = [
        str(f.column)
        for f in ThreadSession._meta.concrete_fields
        if not f.null and str(f.column) not in written
    ]
    assert required == [], "a NOT NULL session column the fast commit does not write"


def _thread() -> str:
    if not Thread.objects.exists():
        save_definitions(
            [("m", MODEL), ("p", PROMPT), *[(a.name, a) for a in AGENTS]], strict_code_names=False
        )
    return store._create_thread(NewThread(id=new_id(), agent_name="a")).id


def _commit(thread_id: str, n: int) -> Commit:
    """A commit that sets every column to something other than its default."""
    message_id, log_id, parent_log = new_id(), new_id(), new_id()
    logs = [
        LogRecord(id=parent_log, thread_id=thread_id, kind="system", created_at=10 + n),
        LogRecord(
            id=log_id,
            thread_id=thread_id,
            kind="llm",
            message_id=message_id,
            parent_id=parent_log,
            retry_of_id=parent_log,
            provider="test",
            model="m",
            model_id="scripted",
            prompt_name="p",
            attempt=2,
            tool_name="t",
            tool_call_id="call_1",
            request_body={"messages": [{"role": "user", "content": 'é \u2603 "q"'}]},
            response_body=None,
            system_prompt="sys",
            status_code=200,
            finish_reason=None,  # type: ignore[arg-type]
            input_tokens=11,
            cached_tokens=3,
            output_tokens=5,
            reasoning_tokens=2,
            total_tokens=16,
            cost_input=0.1 + 0.2,
            cost_cached=1e-13,
            cost_output=123.456789012345678,
            cost_total=1 / 3,
            latency_ms=7,
            time_to_first_token_ms=4,
            error=None,  # type: ignore[arg-type]
            error_type="interrupted",
            is_complete=True,
            created_at=20 + n,
        ),
    ]
    messages = [
        EngineMessage(
            id=message_id,
            role="assistant",
            content="hello",
            name="n",
            tool_calls=[{"id": "call_1", "type": "function", "function": {"name": "t"}}],
            tool_call_id="tc",
            tool_status="error",
            status="completed",
            created_at=30 + n,
            request_sent_at=31,
            response_completed_at=32,
            depth=1,
            silent=True,
            metadata=None,  # type: ignore[arg-type]
            side="b",
            attachments=None,
            reasoning_content="why",
            reasoning_details=[{"type": "reasoning.text", "text": "x"}],
            log_id=log_id,
            prompt_name=None,
            subagent_id=thread_id,
        )
    ]
    progress = SessionProgress(session_id=new_id(), agent="a", side="b", root_message_id=message_id)
    progress.finished, progress.stop_reason = True, "step_error"
    return Commit(
        messages=messages,
        logs=logs,
        progress=progress,
        thread=ThreadUpdate(agent_name="b", stopped=True),
    )


def _stored(commit: Commit) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for log in commit.logs:
        row = model_to_dict(Log.objects.get(pk=log.id))
        rows.append({k: v for k, v in row.items() if k != "id"})
    for m in commit.messages:
        row = model_to_dict(Message.objects.get(pk=m.id))
        rows.append({k: v for k, v in row.items() if k not in ("id", "parent", "log")})
    assert commit.progress is not None
    session = ThreadSession.objects.get(pk=commit.progress.session_id)
    rows.append({k: v for k, v in model_to_dict(session).items() if k not in ("id", "created_at")})
    return rows


def test_the_fast_commit_stores_what_the_orm_commit_stores() -> None:
    assert connection.vendor == "postgresql" and fast_commit.supported()
    fast_thread, orm_thread = _thread(), _thread()
    fast, orm = _commit(fast_thread, 0), _commit(orm_thread, 0)
    store.commit_rows(fast_thread, fast)
    store._commit_orm(orm_thread, orm)

    def normalized(rows: list[dict[str, Any]], thread_id: str) -> list[dict[str, Any]]:
        # Ids differ between the two threads; every other column must be equal.
        ids = ("thread", "parent", "retry_of", "message_id", "subagent", "root_message_id")
        out = [{k: v for k, v in row.items() if k not in ids} for row in rows]
        for row in out:
            if "progress" in row:
                row["progress"] = {
                    k: v for k, v in row["progress"].items() if k not in ("session_id", *ids)
                }
        return out

    fast_rows = normalized(_stored(fast), fast_thread)
    orm_rows = normalized(_stored(orm), orm_thread)
    assert len(fast_rows) == len(orm_rows) == 4
    assert [sorted(r.items()) for r in fast_rows] == [sorted(r.items()) for r in orm_rows]


def test_the_fast_commit_reads_back_the_updated_stop_flag_and_the_queue() -> None:
    thread_id = _thread()
    commit = _commit(thread_id, 0)
    stopped, queued = fast_commit.commit_in_one_statement(thread_id, commit)
    assert (stopped, queued) == (True, False)
    thread = Thread.objects.select_related("agent").get(pk=thread_id)
    assert (thread.stopped, thread.agent.name) == (True, "b")
    assert ThreadSession.objects.get(pk=commit.progress.session_id).status == "failed"  # type: ignore[union-attr]


def test_the_fast_commit_of_an_unknown_thread_is_a_lookup_error() -> None:
    _thread()
    with pytest.raises(LookupError):
        fast_commit.commit_in_one_statement(new_id(), Commit())


def test_the_commit_statement_is_prepared_once_and_reused() -> None:
    # Django opens connections with prepare_threshold=None, which silently disables
    # prepare=True; the statement would then be parsed and planned on every commit.
    thread_id = _thread()
    for n in range(3):
        fast_commit.commit_in_one_statement(thread_id, _commit(thread_id, n))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements "
            "WHERE statement LIKE %s AND statement LIKE %s",
            ["%jsonb_populate_recordset(NULL::agents_app_log%", "%agents_app_message%"],
        )
        row = cursor.fetchone()
    assert row is not None and row[0] == 1


def test_the_commit_statement_goes_to_psycopg_converted_once() -> None:
    """psycopg re-scans ``%s`` statements over 4 KB on every call; the commit is longer, so
    it goes with PostgreSQL's own placeholders, converted once per shape."""
    thread_id = _thread()
    query, params = fast_commit.statement(thread_id, _commit(thread_id, 0))
    assert len(query.encode()) > psycopg_queries.MAX_CACHED_STATEMENT_LENGTH
    sql = fast_commit.raw_sql(query)
    assert b"%s" not in sql and sql.count(b"$") == len(params)
    assert f"${len(params)}".encode() in sql and f"${len(params) + 1}".encode() not in sql
    again, _ = fast_commit.statement(thread_id, _commit(thread_id, 1))
    assert again == query and again is not query
    assert fast_commit.raw_sql(again) is sql
    assert fast_commit.raw_sql("SELECT 1") == b"SELECT 1"


def test_a_fenced_commit_finds_its_session_by_the_primary_key_in_a_young_table() -> None:
    """The commit is prepared once per connection and its plan kept. Planned while the
    session table was young (never analyzed), a fence that filtered on owner and status
    scanned the (status, heartbeat) index through every running session, at every commit
    of the connection's life (issue #21)."""
    thread_id = _thread()
    for _ in range(30):  # other running sessions: the rows the wrong plan walks through
        ThreadSession.objects.create(thread_id=_thread(), status="running", owner="other")
    session = ThreadSession.objects.create(thread_id=thread_id, status="running", owner="w1")
    commit = _commit(thread_id, 0)
    claimed = fast_commit.ClaimedRow(str(session.pk), owner="w1")
    query, params = fast_commit.statement(thread_id, commit, claimed)
    with transaction.atomic(), connection.cursor() as cursor:
        # The plan a connection keeps after its first executions: the generic one.
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute("PREPARE fenced AS " + fast_commit.raw_sql(query).decode())
        marks = ", ".join(["%s"] * len(params))
        cursor.execute(f"EXPLAIN EXECUTE fenced({marks})", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("DEALLOCATE fenced")
    fence = plan.split("CTE own")[1].split("CTE ")[0]
    assert "agents_app_threadsession_pkey" in fence, plan
    assert "session_status_heartbeat" not in plan, plan


def test_a_statement_with_any_other_percent_sign_is_not_converted() -> None:
    with pytest.raises(ValueError, match="only %s placeholders"):
        fast_commit.raw_sql("SELECT %s WHERE name LIKE 'a%'")


def _stored_without_ids(commit: Commit) -> list[list[tuple[str, Any]]]:
    ids = ("thread", "parent", "retry_of", "message_id", "subagent", "root_message_id")
    out = []
    for row in _stored(commit):
        row.pop("progress", None)  # its ids differ; the rest of the row must not
        out.append(sorted((k, v) for k, v in row.items() if k not in ids))
    return out


def test_without_server_prepare_nothing_is_prepared_and_the_same_rows_are_stored(
    settings: Any,
) -> None:
    # Behind a pooler that cannot carry protocol-level prepared statements (PgBouncer < 1.21
    # in transaction pooling) a prepared statement would be missing on the next server
    # connection: DB_SERVER_PREPARE=false must prepare nothing at all.
    prepared_thread, unprepared_thread = _thread(), _thread()
    prepared, unprepared = _commit(prepared_thread, 0), _commit(unprepared_thread, 0)
    fast_commit.commit_in_one_statement(prepared_thread, prepared)
    connection.close()  # a new server session: no statement prepared on it yet
    settings.DB_SERVER_PREPARE = False
    for n, commit in enumerate([unprepared, _commit(unprepared_thread, 1)]):
        fast_commit.commit_in_one_statement(unprepared_thread, commit)
        with connection.cursor() as cursor:
            cursor.execute("SELECT name, statement FROM pg_prepared_statements")
            assert cursor.fetchall() == [], f"prepared after commit {n}"
    assert _stored_without_ids(unprepared) == _stored_without_ids(prepared)
