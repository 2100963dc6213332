"""``DjangoStore``: the engine's store protocol over the ORM (see ``runtime/store/protocol.py``).

Every public method is a coroutine that runs one sync function in one
transaction through ``sync_to_async``. ``commit`` is the hot path: it is written
to cost a handful of queries (bulk upserts, one UPDATE … RETURNING-style read of
the stop flag) because the engine calls it several times per step.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from agents_app.base.encryption import decrypt, encrypt
from agents_app.bridge import async_commit, fast_commit
from agents_app.bridge.files import FileStoreMixin
from agents_app.bridge.grants import GrantStoreMixin
from agents_app.bridge.user_values import UserValueStoreMixin
from agents_app.bridge.users import thread_user
from agents_app.db import page_reads, rows
from agents_app.db.raw_sql import db_uuid, insert_row, prepared_cursor, row_by_uuid
from agents_app.db.thread_records import CHILDREN, RECORD, record_from
from agents_app.models import (
    Agent,
    EnvValue,
    LanguageModel,
    Log,
    Message,
    Prompt,
    QueuedMessage,
    ScheduledEffect,
    Thread,
    ThreadSession,
    ThreadValue,
)
from agents_app.models.timestamps import now_us
from agents_app.services.definitions import rows as defs
from agents_app.services.env.redaction import secret_values_for_thread
from agents_app.services.sessions import effects as effect_service
from runtime.core import waits
from runtime.core.messages import Message as EngineMessage
from runtime.core.progress import SessionProgress
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.store.protocol import (
    CanceledBy,
    Commit,
    CommitResult,
    DefinitionKind,
    EffectRun,
    EnvEntry,
    EnvType,
    LogQuery,
    LogRecord,
    MessagePage,
    MessageQuery,
    NewThread,
    ThreadRecord,
    ThreadUpdate,
    UserRecord,
    lands_visible_reply,
)
from runtime.store.protocol import QueuedMessage as EngineQueued

T = TypeVar("T")
ENV_ORDER = ("thread", "agent", "prompt", "user", "instance")


def _thread(thread_id: str) -> Thread:
    try:
        return Thread.objects.select_related("agent", "origin_agent").get(pk=thread_id)
    except (Thread.DoesNotExist, ValueError, ValidationError):
        # ValidationError: not a UUID (Django's UUIDField says so before any query).
        raise LookupError(f"Thread not found: {thread_id}") from None


# A fixed statement: a session start without stored messages yet runs it.
_EXISTS_SQL = f"SELECT 1 FROM {Thread._meta.db_table} WHERE id = %s"


def _exists(thread_id: str) -> None:
    if row_by_uuid(_EXISTS_SQL, thread_id) is None:  # None for a malformed id too
        raise LookupError(f"Thread not found: {thread_id}")


# --- threads ---------------------------------------------------------------------------


@transaction.atomic
def _create_thread(new: NewThread, agent: Agent | None = None) -> ThreadRecord:
    """``agent``: the row of ``new.agent_name`` when the caller has read it already."""
    if agent is None or agent.name != new.agent_name:
        agent = Agent.objects.get(name=new.agent_name)
    parent = Thread.objects.filter(pk=new.parent_id).first() if new.parent_id else None
    row = Thread(
        id=uuid.UUID(new.id),
        agent=agent,
        origin_agent=agent,
        # Children belong to the parent's owner (the reference leaves them ownerless).
        owner_id=new.user_id or (parent.owner_id if parent else None),
        parent=parent,
        tags=list(new.tags),
        display_name=new.display_name[:120],
        relationship=new.relationship[:200],
        child_status=new.child_status,
        subagent_config=new.subagent,
    )
    # A statement built once (the ORM compiled the insert at every creation, issue #58);
    # nothing listens to a thread's save signals (tests/agents_app/db/test_thread_creation_reads.py).
    insert_row(row)
    for key, value in new.env.items():
        env = EnvValue(scope=EnvValue.Scope.THREAD, thread=row, key=key)
        env.value = value
        env.save()
    record = _get_thread(str(row.id))
    if record is None:  # created just now, in this transaction: cannot happen
        raise LookupError(f"Thread not found: {row.id}")
    return record


def _get_thread(thread_id: str) -> ThreadRecord | None:
    row = row_by_uuid(RECORD.sql, thread_id)
    return record_from(RECORD, row) if row is not None else None


def _list_children(thread_id: str) -> list[ThreadRecord]:
    _exists(thread_id)
    with connection.cursor() as cursor:
        cursor.execute(CHILDREN.sql, [db_uuid(thread_id)])
        return [record_from(CHILDREN, row) for row in cursor.fetchall()]


def _set_child_status(thread_id: str, status: str) -> None:
    _exists(thread_id)
    Thread.objects.filter(pk=thread_id).update(child_status=status)


@transaction.atomic
def _terminate_thread(thread_id: str) -> None:
    _exists(thread_id)
    rows = Thread.objects.filter(pk=thread_id)
    rows.filter(terminated_at__isnull=True).update(terminated_at=timezone.now())
    rows.update(stopped=True)
    rows.filter(parent__isnull=False).update(child_status="terminated")


# --- messages --------------------------------------------------------------------------


def _list_messages(thread_id: str, query: MessageQuery, *, known: bool = False) -> MessagePage:
    """A page of the thread's messages for the engine; ``known``: the caller knows the
    thread exists (a claimed session's own), so an empty page is not checked."""
    scope: dict[str, Any] = {
        "include_silent": query.include_silent,
        "max_depth": query.max_depth,
        "parent_id": query.parent_id,
    }
    try:
        db_uuid(thread_id)
    except ValueError:  # not a UUID: no such thread
        raise LookupError(f"Thread not found: {thread_id}") from None
    # Plain SQL (``page_reads``): every session start reads its history here.
    window, newest_at = page_reads.engine_messages(
        thread_id,
        **scope,
        newest=query.order == "desc",
        offset=query.offset,
        limit=query.limit,
        with_newest=query.with_newest,
    )
    # Every session reads its whole history: without a limit or an offset the window is
    # the total, so neither the count nor (when a row came back) the thread check is a
    # query of its own; nor is the count for a caller that reads no total.
    whole = query.limit is None and query.offset == 0
    if whole or not query.with_total:
        total = query.offset + len(window)
    else:
        total = page_reads.engine_message_count(thread_id, **scope)
    if not window and not known:
        # No rows: a thread without messages (or none past the offset), or no such thread.
        _exists(thread_id)
    has_more = query.offset + len(window) < total
    if query.order == "desc":
        window.reverse()
    return MessagePage(window, total, has_more, newest_at)


def _delete_message(thread_id: str, message_id: str) -> list[str]:
    _exists(thread_id)
    try:
        uuid.UUID(message_id)
    except ValueError:
        return []
    with transaction.atomic():
        deleted, _ = QueuedMessage.objects.filter(thread_id=thread_id, pk=message_id).delete()
        if deleted:
            return [message_id]
        row = Message.objects.select_for_update().filter(thread_id=thread_id, pk=message_id).first()
        if row is None:
            return []
        call_ids = [c.get("id") for c in row.tool_calls or [] if isinstance(c, dict)]
        answers = Message.objects.filter(thread_id=thread_id, tool_call_id__in=call_ids)
        ids = [str(pk) for pk in answers.values_list("pk", flat=True)] if call_ids else []
        if ids:
            answers.delete()
        row.delete()
    return [message_id, *ids]


def _instance_env(name: str) -> EnvEntry | None:
    row = EnvValue.objects.filter(scope="instance", key=name).first()
    return EnvEntry(row.value, row.value_type, "instance") if row else None  # type: ignore[arg-type]


def _get_user(user_id: str) -> UserRecord | None:
    from django.contrib.auth import get_user_model

    try:
        user = get_user_model().objects.filter(pk=user_id).first()
    except (ValueError, ValidationError):
        return None
    return None if user is None else thread_user(user)


def _get_message(thread_id: str, message_id: str) -> EngineMessage | None:
    _exists(thread_id)
    try:
        row = Message.objects.filter(thread_id=thread_id, pk=message_id).first()
    except ValueError:
        return None
    return rows.engine_message(row) if row else None


def _queue_message(thread_id: str, m: EngineQueued) -> None:
    _exists(thread_id)
    QueuedMessage.objects.create(
        id=uuid.UUID(m.id),
        thread_id=thread_id,
        role=m.role,
        content=m.content,
        attachments=m.attachments,
        silent=m.silent,
        metadata=m.metadata,
        created_at=m.created_at or now_us(),
    )


def _list_queued(thread_id: str) -> list[EngineQueued]:
    _exists(thread_id)
    return [
        EngineQueued(
            id=str(r.pk),
            role=r.role,  # type: ignore[arg-type]
            content=r.content,
            attachments=r.attachments,
            silent=r.silent,
            metadata=r.metadata or {},
            created_at=r.created_at,
        )
        for r in QueuedMessage.objects.filter(thread_id=thread_id).order_by("created_at")
    ]


# --- commit ----------------------------------------------------------------------------


def _upsert_logs(thread_id: str, logs: list[LogRecord]) -> None:
    Log.objects.bulk_create(
        [rows.log_row(thread_id, log) for log in logs],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=rows.LOG_UPDATE_FIELDS,
    )


def _upsert_messages(thread_id: str, messages: list[EngineMessage]) -> None:
    Message.objects.bulk_create(
        [rows.message_row(thread_id, m) for m in messages],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=rows.MESSAGE_UPDATE_FIELDS,
    )


def _session_row(thread_id: str, progress: SessionProgress) -> ThreadSession:
    return ThreadSession(
        id=uuid.UUID(progress.session_id),
        thread_id=thread_id,
        status=rows.session_status(progress),
        side=progress.side,
        root_message_id=rows._uuid(progress.root_message_id),
        progress=progress.dump(),
        stop_reason=progress.stop_reason or "",
        created_at=timezone.now(),
    )


def _save_progress(thread_id: str, progress: SessionProgress) -> None:
    ThreadSession.objects.bulk_create(
        [_session_row(thread_id, progress)],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=["status", "side", "progress", "stop_reason"],
    )


def _update_thread(thread_id: str, update: ThreadUpdate | None, reply_landed: bool) -> None:
    fields: dict[str, Any] = {"last_message_at": timezone.now()} if reply_landed else {}
    update = update or ThreadUpdate()
    if update.agent_name is not None:
        fields["agent"] = Agent.objects.get(name=update.agent_name)
    if update.stopped is not None:
        fields["stopped"] = update.stopped
    if update.execution_state is not None:
        fields["execution_state"] = update.execution_state.dump()
    if fields:
        Thread.objects.filter(pk=thread_id).update(**fields)


def _drain_queue(thread_id: str) -> list[EngineMessage]:
    # A message posted under the agent's ``enqueue`` or ``interrupt`` policy (metadata
    # ``mid_run``) waits for a session of its own: the release starts it (docs/automation.md).
    queued = list(
        QueuedMessage.objects.select_for_update()
        .filter(thread_id=thread_id)
        .exclude(metadata__has_key="mid_run")
        .order_by("created_at")
    )
    if not queued:
        return []
    last = Message.objects.filter(thread_id=thread_id).aggregate(m=Max("created_at"))["m"] or 0
    drained: list[Message] = []
    for row in queued:
        last = max(last + 1, row.created_at)
        message = rows.queued_to_message(row, last)
        # Subagent results and notifications name their child (the registry projection).
        child = (row.metadata or {}).get("subagent_id")
        if child and Thread.objects.filter(pk=child).exists():
            message.subagent_id = child
        drained.append(message)
    Message.objects.bulk_create(drained)
    QueuedMessage.objects.filter(pk__in=[r.pk for r in queued]).delete()
    return [rows.engine_message(m) for m in drained]


def commit_rows(
    thread_id: str, commit: Commit, claimed: fast_commit.ClaimedRow | None = None
) -> CommitResult:
    """The engine's commit on Django's connection (part of the caller's transaction, if it
    holds one): on PostgreSQL one statement (``fast_commit``), then the queue's drain when
    something is queued; on SQLite (the embedded default) the same writes through the ORM.

    Under a claimed session row (``claimed``) the progress goes onto that row with a fresh
    heartbeat and queue rows stored as messages are deleted; with the claim's owner nothing
    is written unless that owner still runs the session (``fast_commit.NotOwner``).
    """
    if not fast_commit.supported():
        return _commit_orm(thread_id, commit, claimed)
    stopped, queued = fast_commit.commit_in_one_statement(thread_id, commit, claimed)
    if not (commit.drain_queue and queued):
        return CommitResult(stopped=stopped, drained=[])
    return _drain(thread_id, claimed)


def _drain(thread_id: str, claimed: fast_commit.ClaimedRow | None) -> CommitResult:
    """Rare: something was queued while the session ran. The ORM in a transaction of its
    own, under the claimed row's lock (ownership checked again) when there is one."""
    with transaction.atomic():
        _fence(claimed)
        drained = _drain_queue(thread_id)
        stopped = bool(
            Thread.objects.filter(pk=thread_id).values_list("stopped", flat=True).first()
        )
    return CommitResult(stopped=stopped, drained=drained)


def _fence(claimed: fast_commit.ClaimedRow | None) -> None:
    """Lock the claimed row until the transaction ends; ``NotOwner`` unless the claim's
    owner still runs the session (a worker that lost it writes nothing)."""
    if claimed is None or claimed.owner is None:
        return
    row = (
        ThreadSession.objects.select_for_update()
        .filter(pk=claimed.session_id)
        .values("owner", "status")
        .first()
    )
    if row is None or row["owner"] != claimed.owner or row["status"] != "running":
        raise fast_commit.NotOwner(claimed.session_id)


def _commit_orm(
    thread_id: str, commit: Commit, claimed: fast_commit.ClaimedRow | None = None
) -> CommitResult:
    """``commit_rows`` through the ORM: what the statement does, in one transaction."""
    with transaction.atomic():
        _fence(claimed)
        if commit.logs:
            _upsert_logs(thread_id, commit.logs)
        if commit.messages:
            _upsert_messages(thread_id, commit.messages)
        if claimed is not None:
            _update_claimed(thread_id, commit, claimed)
        elif commit.progress is not None:
            _save_progress(thread_id, commit.progress)
        _update_thread(thread_id, commit.thread, lands_visible_reply(commit.messages))
        drained = _drain_queue(thread_id) if commit.drain_queue else []
        stopped = Thread.objects.filter(pk=thread_id).values_list("stopped", flat=True).first()
    if stopped is None:
        raise LookupError(f"Thread not found: {thread_id}")
    return CommitResult(stopped=stopped, drained=drained)


def _update_claimed(thread_id: str, commit: Commit, claimed: fast_commit.ClaimedRow) -> None:
    """The claimed row's part of a commit: a posted message stored under its queue row's id
    leaves the queue, and the progress goes onto the row with a fresh heartbeat."""
    stored = [m.id for m in commit.messages]
    if stored:
        QueuedMessage.objects.filter(thread_id=thread_id, pk__in=stored).delete()
    fields: dict[str, Any] = {"heartbeat_at": timezone.now()}
    if commit.progress is not None:
        progress = commit.progress
        fields.update(
            progress=progress.dump(), side=progress.side, stop_reason=progress.stop_reason or ""
        )
    ThreadSession.objects.filter(pk=claimed.session_id).update(**fields)


def _decide_tool_call(
    thread_id: str, tool_call_id: str, decision: dict[str, Any]
) -> EngineMessage | None:
    _exists(thread_id)
    waiting = (
        Message.objects.filter(
            thread_id=thread_id,
            role=Message.Role.TOOL,
            status=Message.Status.PENDING,
            tool_call_id=tool_call_id,
        )
        .filter(metadata__has_key=waits.WAIT_KEY)
        .exclude(**{f"metadata__{waits.WAIT_KEY}__has_key": "decision"})
    )
    with transaction.atomic():
        row = waiting.select_for_update().first()
        if row is None:
            return None
        decided = waits.decide(rows.engine_message(row), decision)
        if decided is None:
            return None
        # Conditional: only a call that still waits takes the decision.
        if waiting.filter(pk=row.pk).update(metadata=decided.metadata) != 1:
            return None
    return decided


def _load_progress(thread_id: str) -> SessionProgress | None:
    _exists(thread_id)
    row = (
        ThreadSession.objects.filter(thread_id=thread_id)
        .order_by("-created_at")
        .only("progress")
        .first()
    )
    if row is None or not row.progress:
        return None
    return SessionProgress.model_validate(row.progress)


# --- logs ------------------------------------------------------------------------------


def _list_logs(thread_id: str, query: LogQuery) -> list[LogRecord]:
    _exists(thread_id)
    qs = Log.objects.filter(thread_id=thread_id)
    if query.kind is not None:
        qs = qs.filter(kind=query.kind)
    newest = qs.order_by("-created_at")[query.offset :]
    window = list(newest if query.limit is None else newest[: query.limit])
    if query.order == "asc":
        window.reverse()
    return [rows.engine_log(r) for r in window]


# A fixed statement: each session's first request to a model runs it.
_LLM_RESPONSES_SQL = (
    f"SELECT COUNT(*) FROM {Log._meta.db_table} WHERE thread_id = %s AND kind = %s "
    "AND model = %s AND is_complete AND error_type <> %s"
)


def _count_llm_responses(thread_id: str, model: str) -> int:
    try:
        pk = db_uuid(thread_id)
    except ValueError:
        return 0
    with prepared_cursor() as cursor:
        cursor.execute(_LLM_RESPONSES_SQL, [pk, Log.Kind.LLM, model, "interrupted"])
        return int(cursor.fetchone()[0])


# --- env -------------------------------------------------------------------------------


_THREADS, _ENV_VALUES = Thread._meta.db_table, EnvValue._meta.db_table
_AGENTS, _PROMPTS = Agent._meta.db_table, Prompt._meta.db_table
# One statement for every provider request that resolves its key (each step of a vendor's
# model): a marker row when the thread exists, then each tier's value of the key, the
# thread's agent, owner and first prompt found by subqueries. The ORM's version read the
# thread first, two statements per step on the worker's one database thread (issue #39).
_RESOLVE_ENV_SQL = (
    f"SELECT '', '', '' FROM {_THREADS} WHERE id = %s UNION ALL "
    f"SELECT e.scope, e.value_type, e.ciphertext FROM {_ENV_VALUES} e WHERE e.key = %s AND ("
    "(e.scope = 'thread' AND e.thread_id = %s) "
    f"OR (e.scope = 'agent' AND e.agent_id = (SELECT agent_id FROM {_THREADS} WHERE id = %s)) "
    f"OR (e.scope = 'prompt' AND e.prompt_id IN (SELECT id FROM {_PROMPTS} WHERE name = "
    f"COALESCE(%s, (SELECT p.name FROM {_THREADS} t JOIN {_AGENTS} a ON a.id = t.agent_id "
    f"JOIN {_PROMPTS} p ON p.id = COALESCE(a.side_a_prompt_id, a.side_b_prompt_id) "
    "WHERE t.id = %s)))) "
    f"OR (e.scope = 'user' AND e.user_id = (SELECT owner_id FROM {_THREADS} WHERE id = %s)) "
    "OR e.scope = 'instance')"
)


def _resolve_env(thread_id: str, name: str, prompt: str | None) -> EnvEntry | None:
    """thread → agent → prompt (``prompt``, else the agent's first) → user → instance."""
    try:
        pk = db_uuid(thread_id)
    except ValueError:
        raise LookupError(f"Thread not found: {thread_id}") from None
    with connection.cursor() as cursor:
        cursor.execute(_RESOLVE_ENV_SQL, [pk, name, pk, pk, prompt or None, pk, pk])
        rows = cursor.fetchall()
    by_scope = {scope: (kind, sealed) for scope, kind, sealed in rows}
    if "" not in by_scope:
        raise LookupError(f"Thread not found: {thread_id}")
    for scope in ENV_ORDER:
        found = by_scope.get(scope)
        if found is not None:
            # Definition-level values are always secret (spec 0.15 / reference).
            kind = "secret" if scope in ("agent", "prompt") else found[0]
            return EnvEntry(decrypt(found[1]), kind, scope)  # type: ignore[arg-type]
    return None


# Tiers whose values belong to the thread's owner (the only non-staff user who sees it).
def _set_env(thread_id: str, name: str, value: str, kind: EnvType | None) -> None:
    _exists(thread_id)
    with transaction.atomic():
        row = (
            EnvValue.objects.select_for_update()
            .filter(scope=EnvValue.Scope.THREAD, thread_id=thread_id, key=name)
            .first()
        )
        if row is None:
            row = EnvValue(scope=EnvValue.Scope.THREAD, thread_id=thread_id, key=name)
            row.value_type = kind or EnvValue.Type.SECRET
        elif kind is not None:
            row.value_type = kind
        row.value = value
        row.save()


# --- values ----------------------------------------------------------------------------


def _get_value(thread_id: str, key: str) -> Any:
    _exists(thread_id)
    row = (
        ThreadValue.objects.filter(thread_id=thread_id, key=key)
        .values_list("value", "sealed")
        .first()
    )
    return _exact(*row) if row else None


def _exact(value: Any, sealed: str) -> Any:
    """A stored value as getValue returns it: the sealed exact form when one was kept."""
    return json.loads(decrypt(sealed)) if sealed else value


def _set_value(thread_id: str, key: str, value: Any, exact: Any) -> int:
    _exists(thread_id)
    updated_at = now_us()
    if value is None:
        ThreadValue.objects.filter(thread_id=thread_id, key=key).delete()
    else:
        sealed = "" if exact is None else encrypt(json.dumps(exact))
        ThreadValue.objects.update_or_create(
            thread_id=thread_id,
            key=key,
            defaults={"value": value, "sealed": sealed, "updated_at": updated_at},
        )
    return updated_at


def _list_values(thread_id: str, prefix: str) -> dict[str, Any]:
    _exists(thread_id)
    qs = ThreadValue.objects.filter(thread_id=thread_id, key__startswith=prefix).order_by("key")
    return {
        key: _exact(value, sealed)
        for key, value, sealed in qs.values_list("key", "value", "sealed")
    }


# --- definitions ---------------------------------------------------------------------------


def _get_agent(name: str) -> AgentDefinition | None:
    row = Agent.objects.select_related("side_a_prompt", "side_b_prompt").filter(name=name).first()
    return defs.agent_definition(row) if row else None


def _get_prompt(name: str) -> PromptDefinition | None:
    row = Prompt.objects.select_related("model").filter(name=name).first()
    return defs.prompt_definition(row) if row else None


def _get_model(name: str) -> ModelDefinition | None:
    row = LanguageModel.objects.filter(name=name).first()
    return defs.model_definition(row) if row else None


_KIND_MODELS: dict[str, Any] = {"agent": Agent, "prompt": Prompt, "model": LanguageModel}


def _definition_names(kind: DefinitionKind) -> list[str]:
    return sorted(_KIND_MODELS[kind].objects.values_list("name", flat=True))


# --- effects (rows and transitions: agents_app.services.sessions.effects) -------------------------------


def _ms(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def effect_record(row: ScheduledEffect) -> EffectRun:
    """The engine's view of an effect run row (times in ms)."""
    return EffectRun(
        id=str(row.pk),
        thread_id=str(row.thread_id),
        name=row.name,
        args=row.args,
        scheduled_at=_ms(row.due_at) or 0,
        created_at=_ms(row.created_at) or 0,
        status=row.status,  # type: ignore[arg-type]
        attempts=row.attempts,
        error=row.error or None,
        completed_at=_ms(row.completed_at),
        manual_run=row.manual_run,
        manual_run_at=_ms(row.manual_run_at),
        replayed_from=str(row.replayed_from_id) if row.replayed_from_id else None,
    )


def _schedule_effect(run: EffectRun) -> tuple[EffectRun, bool]:
    _exists(run.thread_id)
    row, created = effect_service.effect_schedule(
        thread_id=run.thread_id,
        name=run.name,
        args=run.args,
        due_at=datetime.fromtimestamp(run.scheduled_at / 1000, tz=UTC),
        effect_id=run.id,
    )
    return effect_record(row), created


def _list_effects(thread_id: str, name: str | None) -> list[EffectRun]:
    _exists(thread_id)
    rows = effect_service.effects_pending(thread_id=thread_id, name=name)
    return [effect_record(r) for r in rows]


def _cancel_effect(thread_id: str, effect_id: str, by: CanceledBy) -> EffectRun | None:
    _exists(thread_id)
    try:
        pk = uuid.UUID(effect_id)
    except ValueError:
        return None
    row = effect_service.cancel_pending(thread_id=thread_id, effect_id=pk, by=by)
    return effect_record(row) if row is not None else None


class DjangoStore(FileStoreMixin, UserValueStoreMixin, GrantStoreMixin):
    """The store protocol over the Django ORM (files: ``bridge/files.py``, user values:
    ``bridge/user_values.py``, credential grants: ``bridge/grants.py``).

    Definitions are cached per instance: a store serves one session, which
    should see one consistent version of its agent, prompts and models.

    With ``async_commits`` (PostgreSQL only), ``commit`` runs its one statement on
    the event loop's own psycopg connection (``bridge/async_commit.py``) instead of
    Django's connection in asgiref's executor thread. Only for callers that hold no
    transaction of their own: that connection would not see it.
    """

    # The row of the agent whose thread this store creates, when the caller read it already.
    agent_row: Agent | None = None

    def __init__(self, *, async_commits: bool = False) -> None:
        self._definitions: dict[tuple[str, str], Any] = {}
        self.async_commits = async_commits and fast_commit.supported()

    async def _cached(self, kind: str, name: str, loader: Any) -> Any:
        key = (kind, name)
        if key not in self._definitions:
            self._definitions[key] = await sync_to_async(loader)(name)
        return self._definitions[key]

    async def create_thread(self, new: NewThread) -> ThreadRecord:
        return await sync_to_async(_create_thread)(new, self.agent_row)

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        return await sync_to_async(_get_thread)(thread_id)

    async def list_messages(self, thread_id: str, query: MessageQuery) -> MessagePage:
        return await sync_to_async(_list_messages)(thread_id, query)

    async def list_known_messages(self, thread_id: str, query: MessageQuery) -> MessagePage:
        """``list_messages`` of a thread the caller knows exists (a claimed session's own):
        an empty page needs no statement to tell "no messages yet" from "no such thread"."""
        return await sync_to_async(_list_messages)(thread_id, query, known=True)

    async def get_message(self, thread_id: str, message_id: str) -> EngineMessage | None:
        return await sync_to_async(_get_message)(thread_id, message_id)

    async def delete_message(self, thread_id: str, message_id: str) -> list[str]:
        return await sync_to_async(_delete_message)(thread_id, message_id)

    async def get_instance_env(self, name: str) -> EnvEntry | None:
        return await sync_to_async(_instance_env)(name)

    async def get_user(self, user_id: str) -> UserRecord | None:
        return await sync_to_async(_get_user)(user_id)

    async def queue_message(self, thread_id: str, message: EngineQueued) -> None:
        await sync_to_async(_queue_message)(thread_id, message)

    async def list_queued(self, thread_id: str) -> list[EngineQueued]:
        return await sync_to_async(_list_queued)(thread_id)

    async def list_children(self, thread_id: str) -> list[ThreadRecord]:
        return await sync_to_async(_list_children)(thread_id)

    async def set_child_status(self, thread_id: str, status: str) -> None:
        await sync_to_async(_set_child_status)(thread_id, status)

    async def terminate_thread(self, thread_id: str) -> None:
        await sync_to_async(_terminate_thread)(thread_id)

    async def commit(self, thread_id: str, commit: Commit) -> CommitResult:
        return await self.commit_claimed(thread_id, commit, None)

    async def commit_claimed(
        self, thread_id: str, commit: Commit, claimed: fast_commit.ClaimedRow | None
    ) -> CommitResult:
        """``commit_rows``: the engine's one commit path. With ``async_commits`` its statement
        runs on the loop's own connection, and only a drain (rare) takes the ORM's path."""
        if not self.async_commits:
            return await sync_to_async(commit_rows)(thread_id, commit, claimed)
        stopped, queued = await async_commit.commit_in_one_statement(thread_id, commit, claimed)
        if not (commit.drain_queue and queued):
            return CommitResult(stopped=stopped, drained=[])
        return await sync_to_async(_drain)(thread_id, claimed)

    async def load_progress(self, thread_id: str) -> SessionProgress | None:
        return await sync_to_async(_load_progress)(thread_id)

    async def decide_tool_call(
        self, thread_id: str, tool_call_id: str, decision: dict[str, Any]
    ) -> EngineMessage | None:
        return await sync_to_async(_decide_tool_call)(thread_id, tool_call_id, decision)

    async def list_logs(self, thread_id: str, query: LogQuery) -> list[LogRecord]:
        return await sync_to_async(_list_logs)(thread_id, query)

    async def count_llm_responses(self, thread_id: str, model: str) -> int:
        return await sync_to_async(_count_llm_responses)(thread_id, model)

    async def get_agent(self, name: str) -> AgentDefinition | None:
        result: AgentDefinition | None = await self._cached("agent", name, _get_agent)
        return result

    async def get_prompt(self, name: str) -> PromptDefinition | None:
        result: PromptDefinition | None = await self._cached("prompt", name, _get_prompt)
        return result

    async def get_model(self, name: str) -> ModelDefinition | None:
        result: ModelDefinition | None = await self._cached("model", name, _get_model)
        return result

    async def definition_names(self, kind: DefinitionKind) -> list[str]:
        return await sync_to_async(_definition_names)(kind)

    async def resolve_env(
        self, thread_id: str, name: str, prompt: str | None = None
    ) -> EnvEntry | None:
        return await sync_to_async(_resolve_env)(thread_id, name, prompt)

    async def set_env(
        self, thread_id: str, name: str, value: str, type: EnvType | None = None
    ) -> None:
        await sync_to_async(_set_env)(thread_id, name, value, type)

    async def secret_values(self, thread_id: str) -> list[tuple[str, str]]:
        return await sync_to_async(secret_values_for_thread)(thread_id)

    async def get_value(self, thread_id: str, key: str) -> Any:
        return await sync_to_async(_get_value)(thread_id, key)

    async def set_value(self, thread_id: str, key: str, value: Any, exact: Any = None) -> int:
        return await sync_to_async(_set_value)(thread_id, key, value, exact)

    async def list_values(self, thread_id: str, prefix: str = "") -> dict[str, Any]:
        return await sync_to_async(_list_values)(thread_id, prefix)

    async def schedule_effect(self, run: EffectRun) -> tuple[EffectRun, bool]:
        return await sync_to_async(_schedule_effect)(run)

    async def list_effects(self, thread_id: str, name: str | None = None) -> list[EffectRun]:
        return await sync_to_async(_list_effects)(thread_id, name)

    async def cancel_effect(
        self, thread_id: str, effect_id: str, by: CanceledBy
    ) -> EffectRun | None:
        return await sync_to_async(_cancel_effect)(thread_id, effect_id, by)
