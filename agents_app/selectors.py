"""Reads that check access: ``access_thread(id, user)`` returns the thread or raises.

The API, the consumers and the thread endpoints resolve every thread through
``access_thread``, so "who may see what" is decided here once, by the permission model in
``agents_app.base.permissions``: a thread's owner may do anything with it; others need the
``view``/``change``/``delete`` thread permission for the action (ownerless threads need it
too). Being staff grants nothing by itself.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Sum,
)

from agents_app import wire
from agents_app.base.errors import THREAD_FORBIDDEN, Forbidden, NotFound
from agents_app.base.permissions import (
    AGENTS_VIEW,
    ThreadAction,
    may,
    may_see_all_threads,
    may_use_thread,
    route_thread_action,
)
from agents_app.db import page_reads
from agents_app.db.expansions import log_descendant_ids, workblock_ids
from agents_app.db.raw_sql import (
    db_datetime,
    db_json,
    db_uuid,
    model_from_row,
    model_select,
    prepared_cursor,
    row_by_uuid,
    text_uuid,
)
from agents_app.db.thread_search import match_snippets, threads_matching
from agents_app.models import (
    Agent,
    EnvValue,
    Log,
    Message,
    QueuedMessage,
    ScheduledEffect,
    Thread,
    ThreadFile,
    ThreadSession,
    ThreadValue,
)
from agents_app.models.timestamps import now_us
from agents_app.reasoning import thread_shows_reasoning
from runtime.core.messages import Message as EngineMessage

ACTIVE_SESSION = (ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING)
MAX_IDS = 200
MAX_SUBTREE = 200


def parse_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        return None


def can_see_all(user: Any) -> bool:
    return may_see_all_threads(user)


def sees_every_agent(user: Any) -> bool:
    """Those who may read agents in the studio see drafts and every audience."""
    return may(user, AGENTS_VIEW)


def agents_for(user: Any) -> QuerySet[Agent]:
    """The agents ``user`` is offered (the chat's picker, ``GET /api/agents``, thread
    creation, ``/mcp``): staff see all; others the published ones whose audience is
    everyone (no group chosen) or a group they belong to."""
    if sees_every_agent(user):
        return Agent.objects.all()
    return published_to(user)


def published_to(user: Any) -> QuerySet[Agent]:
    """The published agents whose audience is everyone or a group ``user`` is in: what
    anyone may use, whatever their permissions (no permission query)."""
    through = Agent.audience_groups.through
    restricted = Exists(through.objects.filter(agent_id=OuterRef("pk")))
    audience = Q(~restricted)
    if user is not None and getattr(user, "pk", None):
        audience |= Q(Exists(through.objects.filter(agent_id=OuterRef("pk"), group__user=user)))
    return Agent.objects.filter(audience, state=Agent.State.PUBLISHED)


def is_offered(user: Any, agent_id: Any) -> bool:
    """Whether ``user`` is offered the agent (as ``agents_for``), asking the cheap question
    first: a published agent in their audience needs no permission read."""
    if published_to(user).filter(pk=agent_id).exists():
        return True
    return sees_every_agent(user)


def offered_agent(user: Any, name: str) -> Agent:
    """The agent named ``name`` if ``user`` is offered it; otherwise 404, as if absent (so a
    draft's or a group's agent name is not confirmed to others).

    As ``agents_for``, asking the cheap question first: a published agent in the user's
    audience needs no permission read (two statements, at every thread's creation)."""
    agent = None
    if len(name) <= 128:  # no longer name is saved: nothing to read
        # ``published_to(user).filter(name=name)`` as a fixed statement: every thread's
        # creation reads it, and the ORM's compiling it was a third of that request's calls.
        with prepared_cursor() as cursor:
            cursor.execute(
                _offered_agent_sql(), [name, Agent.State.PUBLISHED, getattr(user, "pk", None)]
            )
            row = cursor.fetchone()
        agent = model_from_row(Agent, row) if row is not None else None
        if agent is None and sees_every_agent(user):
            agent = Agent.objects.filter(name=name).first()
    if agent is None:
        raise NotFound(f"Agent not found: {name}")
    return agent


def access_thread(
    thread_id: str,
    user: Any,
    *,
    for_update: bool = False,
    id_only: bool = False,
    action: ThreadAction | None = None,
) -> Thread:
    """The thread ``thread_id`` if ``user`` may do ``action`` with it; ``NotFound`` /
    ``Forbidden`` otherwise. Without ``action``, the action the API route being served
    names in ``permissions.API_ROUTES`` (``view`` outside a route).

    ``id_only=True`` reads the id and the owner alone, for callers that use nothing else
    (the messages page: the four-table join, then the thread's JSON columns, were a good
    part of that request's time)."""
    pk = parse_uuid(thread_id)
    if id_only and not for_update:
        thread = _thread_id_and_owner(pk) if pk else None
    else:
        thread = _thread_row(pk, for_update=for_update) if pk else None
    if thread is None:
        raise NotFound(f"Thread not found: {thread_id}")
    if not may_use_thread(user, thread.owner_id, action or route_thread_action()):
        raise Forbidden(THREAD_FORBIDDEN)
    return thread


# A fixed statement: every post and every messages page checks access through it.
# The columns in the model's field order: ``Model.from_db`` takes values in that order.
_ID_AND_OWNER_SQL = f"SELECT id, agent_id, owner_id FROM {Thread._meta.db_table} WHERE id = %s"


def _thread_id_and_owner(pk: uuid.UUID) -> Thread | None:
    """The thread with only its id, owner and agent loaded (the others load on access, as
    with ``only()``), without building the ORM's query."""
    row = row_by_uuid(_ID_AND_OWNER_SQL, pk)
    if row is None:
        return None
    return Thread.from_db(
        connection.alias, ["id", "agent_id", "owner_id"], [uuid.UUID(str(row[0])), row[1], row[2]]
    )


@functools.cache
def _published_to_sql() -> str:
    """``published_to``'s rule for the agent ``a`` as SQL, with two parameters: the
    published state and the person's id (``None``: only agents without an audience)."""
    audience = Agent.audience_groups.through._meta.db_table
    members = get_user_model().groups.through._meta.db_table
    return (
        f"(a.state = %s AND ("
        f"NOT EXISTS (SELECT 1 FROM {audience} g WHERE g.agent_id = a.id) OR EXISTS ("
        f"SELECT 1 FROM {audience} g JOIN {members} m ON m.group_id = g.group_id "
        f"WHERE g.agent_id = a.id AND m.user_id = %s)))"
    )


@functools.cache
def _post_sql() -> str:
    return (
        f"SELECT t.id, t.agent_id, t.owner_id, {_published_to_sql()} "
        f"FROM {Thread._meta.db_table} t JOIN {Agent._meta.db_table} a ON a.id = t.agent_id "
        "WHERE t.id = %s"
    )


@functools.cache
def _offered_agent_sql() -> str:
    return f"{model_select(Agent, 'a')} WHERE a.name = %s AND {_published_to_sql()}"


def thread_to_post(thread_id: str, user: Any, *, action: ThreadAction = "change") -> Thread:
    """``access_thread(..., id_only=True)`` for a request that makes the agent answer, with
    whether the agent's publishing and audience offer it to ``user`` read in the same
    statement (``offered_by_audience`` on the returned row): every post pays for it."""
    try:
        pk = db_uuid(thread_id)
    except ValueError:
        raise NotFound(f"Thread not found: {thread_id}") from None
    with prepared_cursor() as cursor:
        cursor.execute(_post_sql(), [Agent.State.PUBLISHED, getattr(user, "pk", None), pk])
        row = cursor.fetchone()
    if row is None:
        raise NotFound(f"Thread not found: {thread_id}")
    thread = Thread.from_db(
        connection.alias, ["id", "agent_id", "owner_id"], [uuid.UUID(str(row[0])), row[1], row[2]]
    )
    if not may_use_thread(user, thread.owner_id, action):
        raise Forbidden(THREAD_FORBIDDEN)
    thread.offered_by_audience = bool(row[3])  # type: ignore[attr-defined]
    return thread


def _thread_row(pk: uuid.UUID, *, for_update: bool) -> Thread | None:
    qs = Thread.objects.select_related(
        "agent", "origin_agent", "agent__side_a_prompt", "agent__side_b_prompt"
    )
    if for_update:
        qs = qs.select_for_update(of=("self",))
    return qs.filter(pk=pk).first()


def active_session_exists() -> Exists:
    return Exists(ThreadSession.objects.filter(thread_id=OuterRef("pk"), status__in=ACTIVE_SESSION))


def is_executing(thread_id: Any) -> bool:
    return ThreadSession.objects.filter(thread_id=thread_id, status__in=ACTIVE_SESSION).exists()


# --- thread list -----------------------------------------------------------------------

Sort = Literal["activity", "created", "oldest"]


@dataclass
class ThreadFilters:
    limit: int = 50
    offset: int = 0
    agent_id: str | None = None
    user_id: str | None = None
    search: str | None = None
    text: str | None = None
    start_date: int | None = None
    end_date: int | None = None
    sort: Sort = "activity"
    executing: bool | None = None
    terminated: bool | None = None
    include_children: bool = False


def _descendants(roots: list[uuid.UUID]) -> set[uuid.UUID]:
    found: set[uuid.UUID] = set()
    frontier = list(roots)
    while frontier:
        children = list(Thread.objects.filter(parent_id__in=frontier).values_list("pk", flat=True))
        frontier = [c for c in children if c not in found]
        found.update(frontier)
    return found


def visible_threads(user: Any) -> QuerySet[Thread]:
    qs = Thread.objects.all()
    return qs if can_see_all(user) else qs.filter(owner=user)


# What ``wire.thread_item`` reads: the list loads 50 threads with two agents each, and the
# unread JSON columns (agent configurations, execution state) cost most of its time.
THREAD_ITEM_FIELDS = (
    "id",
    "owner_id",
    "tags",
    "parent_id",
    "terminated_at",
    "created_at",
    "last_activity_at",
    "last_message_preview",
    "last_message_at",
    "agent__name",
    "agent__title",
    "agent__type",
    "agent__description",
    "agent__icon",
    "agent__side_a_prompt_id",
    "agent__side_a_handler",
    "agent__side_b_handler",
    "origin_agent__name",
)


def thread_list(
    user: Any, f: ThreadFilters, origin: str | None = None
) -> tuple[list[dict[str, Any]], int, bool]:
    qs = visible_threads(user).annotate(is_executing=active_session_exists())
    if f.user_id is not None and can_see_all(user):
        qs = qs.filter(owner_id=int(f.user_id)) if f.user_id.isdigit() else qs.none()
    if f.agent_id:
        matching = Q(agent__name=f.agent_id) | Q(origin_agent__name=f.agent_id)
        if f.include_children:
            roots = list(qs.filter(matching).values_list("pk", flat=True))
            matching |= Q(pk__in=_descendants(roots))
        qs = qs.filter(matching)
    if f.search:
        term = f.search.strip()
        cond = Q(tags__icontains=term)
        pk = parse_uuid(term)
        cond |= Q(pk=pk) if pk else Q()
        qs = qs.filter(cond)
    if f.text:
        qs = threads_matching(qs, f.text)
    if f.start_date is not None:
        qs = qs.filter(created_at__gte=datetime.fromtimestamp(f.start_date, UTC))
    if f.end_date is not None:
        qs = qs.filter(created_at__lte=datetime.fromtimestamp(f.end_date, UTC))
    if f.executing is not None:
        qs = qs.filter(is_executing=f.executing)
    if f.terminated is not None:
        qs = qs.filter(terminated_at__isnull=not f.terminated)
    order = {
        "activity": ("-last_activity_at", "-created_at"),
        "created": ("-created_at",),
        "oldest": ("created_at",),
    }[f.sort]
    total = qs.count()
    page = list(
        qs.order_by(*order, "pk").values(*THREAD_ITEM_FIELDS, "is_executing")[
            f.offset : f.offset + f.limit
        ]
    )
    items = [wire.thread_item_of_values(v, bool(v["is_executing"]), origin) for v in page]
    if f.text:
        found = match_snippets([v["id"] for v in page], f.text)
        for v, item in zip(page, items, strict=True):
            item["match_preview"] = found.get(v["id"])
    return items, total, f.offset + len(items) < total


def thread_detail(thread: Thread, origin: str | None = None) -> dict[str, Any]:
    messages = Message.objects.filter(thread=thread).count()
    logs = Log.objects.filter(thread=thread).count()
    detail = wire.thread_detail(thread, messages, logs, origin)
    detail["thread"]["executing"] = is_executing(thread.pk)
    detail["agent"]["reasoning"] = thread_shows_reasoning(thread)
    return detail


def thread_subtree(thread: Thread) -> list[uuid.UUID]:
    """The thread and all its descendants, parents before children."""
    ordered = [thread.pk]
    frontier = [thread.pk]
    while frontier:
        children = list(
            Thread.objects.filter(parent_id__in=frontier)
            .order_by("created_at")
            .values_list("pk", flat=True)
        )
        children = [c for c in children if c not in ordered]
        ordered.extend(children)
        frontier = children
    return ordered


@functools.cache
def _registry_sql() -> str:
    """``THREAD_ITEM_FIELDS`` of one thread, then whether a session of it is active: a fixed
    statement (every thread's creation announces the thread: the ORM's compiling the
    two-join read was a third of that request's calls, issue #58)."""
    threads, agents = Thread._meta.db_table, Agent._meta.db_table
    sessions = ThreadSession._meta.db_table
    return (
        "SELECT t.id, t.owner_id, t.tags, t.parent_id, t.terminated_at, t.created_at, "
        "t.last_activity_at, t.last_message_preview, t.last_message_at, a.name, a.title, "
        "a.type, a.description, a.icon, a.side_a_prompt_id, a.side_a_handler, "
        "a.side_b_handler, o.name, EXISTS (SELECT 1 FROM "
        f"{sessions} s WHERE s.thread_id = t.id AND s.status IN (%s, %s)) "
        f"FROM {threads} t JOIN {agents} a ON a.id = t.agent_id "
        f"JOIN {agents} o ON o.id = t.origin_agent_id WHERE t.id = %s"
    )


def registry_thread(thread_id: Any) -> dict[str, Any] | None:
    try:
        pk = db_uuid(thread_id)
    except ValueError:
        return None
    with prepared_cursor() as cursor:
        cursor.execute(_registry_sql(), [*(str(s) for s in ACTIVE_SESSION), pk])
        row = cursor.fetchone()
    if row is None:
        return None
    values = dict(zip(THREAD_ITEM_FIELDS, row[:-1], strict=True))
    values["id"] = text_uuid(values["id"])
    values["parent_id"] = text_uuid(values["parent_id"])
    values["tags"] = db_json(values["tags"])
    for name in ("terminated_at", "created_at", "last_activity_at", "last_message_at"):
        values[name] = db_datetime(values[name])
    return wire.registry_thread(values, bool(row[-1]))


def thread_activity(thread_id: Any) -> dict[str, Any] | None:
    """A ``thread_activity`` registry frame for the thread, or None for no such thread: one
    narrow query (sessions announce themselves twice each; the full registry row costs
    two joins and Python for fields this frame does not carry)."""
    # A fixed statement: every session runs it twice on its worker's one database thread.
    try:
        pk = db_uuid(thread_id)
    except ValueError:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVITY_SQL, [*(str(s) for s in ACTIVE_SESSION), pk])
        row = cursor.fetchone()
    if row is None:
        return None
    owner_id, last_activity_at, executing, last_message_at = row
    return activity_frame(
        thread_id,
        owner_id,
        db_datetime(last_activity_at),
        bool(executing),
        db_datetime(last_message_at),
    )


def activity_frame(
    thread_id: Any,
    owner_id: Any,
    last_activity_at: datetime | None,
    executing: bool,
    last_message_at: datetime | None = None,
) -> dict[str, Any]:
    """The ``thread_activity`` registry frame (``owner_id`` is popped by the sender: it
    chooses the owner's group and is not sent). ``last_message_at`` (spec 0.2.0's unread
    rule: a user's visible post or a visible terminal reply) when the thread has one and
    the caller read it."""
    frame = {
        "type": "thread_activity",
        "threadId": str(thread_id),
        "executing": executing,
        "last_activity_at": wire.seconds(last_activity_at),
        "owner_id": owner_id,
    }
    if last_message_at is not None:
        frame["last_message_at"] = wire.seconds(last_message_at)
    return frame


_ACTIVITY_SQL = (
    f"SELECT t.owner_id, t.last_activity_at, EXISTS (SELECT 1 FROM "
    f"{ThreadSession._meta.db_table} s WHERE s.thread_id = t.id AND s.status IN (%s, %s)), "
    f"t.last_message_at FROM {Thread._meta.db_table} t WHERE t.id = %s"
)


# --- messages --------------------------------------------------------------------------


@dataclass
class MessageQuery:
    limit: int = 100
    offset: int = 0
    order: Literal["asc", "desc"] = "desc"
    include_silent: bool = False
    depth: int = 0
    ids: list[str] | None = None
    include_workblocks: bool = False


def _children_by_id(rows: list[Message] | list[EngineMessage]) -> dict[str, Thread]:
    ids = {str(r.subagent_id) for r in rows if r.subagent_id}
    if not ids:
        return {}
    return {str(t.pk): t for t in Thread.objects.select_related("agent").filter(pk__in=ids)}


def _message_dicts(rows: list[Message]) -> list[dict[str, Any]]:
    children = _children_by_id(rows)
    return [
        wire.message_wire(r, children.get(str(r.subagent_id)) if r.subagent_id else None)
        for r in rows
    ]


def _engine_message_dicts(rows: list[EngineMessage]) -> list[dict[str, Any]]:
    children = _children_by_id(rows)
    return [
        wire.engine_message_wire(r, children.get(r.subagent_id) if r.subagent_id else None)
        for r in rows
    ]


def message_page(thread: Thread, q: MessageQuery) -> tuple[list[dict[str, Any]], int, bool]:
    """The reference's page: the newest ``limit`` (``order=desc``) or the oldest
    (``order=asc``) after skipping ``offset``, always returned oldest first.

    Queued messages (not stored yet) count as the newest rows, shown as ``pending``.
    """
    if q.ids is not None:
        return _messages_by_ids(thread, q.ids, workblocks=q.include_workblocks)
    # Plain SQL (``page_reads``): this is the request every chat page makes on open.
    scope: dict[str, Any] = {"depth": q.depth, "include_silent": q.include_silent}
    queued = [
        wire.queued_wire(r)
        for r in page_reads.queued_rows(thread.pk, include_silent=q.include_silent)
    ]
    n_stored = page_reads.stored_count(thread.pk, **scope)
    total = n_stored + len(queued)
    if q.order == "desc":
        # newest first: queued rows, then stored rows by created_at DESC (index scan).
        from_queue = queued[::-1][q.offset : q.offset + q.limit]
        skip = max(0, q.offset - len(queued))
        take = q.limit - len(from_queue)
        rows = (
            page_reads.stored_window(thread.pk, **scope, newest=True, offset=skip, limit=take)
            if take > 0
            else []
        )
        window = _engine_message_dicts(rows)[::-1] + from_queue[::-1]
    else:
        rows = page_reads.stored_window(
            thread.pk, **scope, newest=False, offset=q.offset, limit=q.limit
        )
        skip = max(0, q.offset - n_stored)
        take = q.limit - len(rows)
        window = _engine_message_dicts(rows) + (queued[skip : skip + take] if take > 0 else [])
    return window, total, q.offset + len(window) < total


def _messages_by_ids(
    thread: Thread, ids: list[str], *, workblocks: bool = False
) -> tuple[list[dict[str, Any]], int, bool]:
    pks = [pk for pk in (parse_uuid(i) for i in ids[:MAX_IDS]) if pk]
    if workblocks:
        pks = workblock_ids(thread.pk, pks)
    rows = list(Message.objects.filter(thread=thread, pk__in=pks).order_by("created_at"))
    queued = QueuedMessage.objects.filter(thread=thread, pk__in=pks).order_by("created_at")
    window = _message_dicts(rows) + [wire.queued_wire(r) for r in queued]
    return window, len(window), False


def message_in_thread(thread: Thread, message_id: str) -> Message | None:
    pk = parse_uuid(message_id)
    return Message.objects.filter(thread=thread, pk=pk).first() if pk else None


def queued_in_thread(thread: Thread, message_id: str) -> QueuedMessage | None:
    pk = parse_uuid(message_id)
    return QueuedMessage.objects.filter(thread=thread, pk=pk).first() if pk else None


# --- logs, cost ------------------------------------------------------------------------


@dataclass
class LogQuery:
    limit: int = 100
    offset: int = 0
    order: Literal["asc", "desc"] = "asc"
    ids: list[str] | None = None
    message_ids: list[str] | None = None
    # Spec 0.2.0 (I4): message ids grow to their work blocks; the selection takes in its
    # descendant logs (``parent_log_id``) across ``threads`` (the thread and the descendant
    # threads the caller may view: ``visible_subtree``), all of theirs when nothing narrows it.
    include_workblocks: bool = False
    threads: list[uuid.UUID] | None = None


# What the stop's tidy-up writes on a request a person stopped (services/sessions/lifecycle.py).
STOPPED_LOG_TYPE = "stopped"


def _turn_stopped_by_a_person() -> Exists:
    return Exists(
        ThreadSession.objects.filter(
            thread_id=OuterRef("thread_id"),
            root_message_id=OuterRef("message_id"),
            stop_reason="aborted_by_user",
        )
    )


def cut_short_by_a_stop() -> Q:
    """Requests "interrupted" by a person's Stop, not by a fault.

    "interrupted" is what the engine writes on every request a session left unfinished when
    it resumes: after a worker died (a real fault, which "By error" must still list) and
    after a Stop cancelled the request in flight (the stop's tidy-up turns it into "stopped"
    only when the reply had text to keep: the data keeps "interrupted" for one with none, as
    it is no response, and the test provider's script does not advance past it). The two
    differ in the session: a stopped one ends with ``aborted_by_user``. A request of that
    session's turn (its root message) counts as the stop's; one a worker's death cut short
    earlier in a session a person then stopped is also counted so, which is the rarer mistake
    and hides no failure a person did not end.
    """
    return Q(error_type="interrupted") & Q(_turn_stopped_by_a_person())


def stopped_by_a_person() -> Q:
    """Every request a person's Stop ended: stored "stopped", or cut short before any text."""
    return Q(error_type=STOPPED_LOG_TYPE, error="") | cut_short_by_a_stop()


def with_stops(logs: QuerySet[Log]) -> QuerySet[Log]:
    """``logs``, each knowing whether a person's Stop ended it (``log_stopped``)."""
    return logs.annotate(stopped_by_user=ExpressionWrapper(stopped_by_a_person(), BooleanField()))


def log_stopped(row: Log) -> bool:
    """Whether a person's Stop ended the request (a row of ``with_stops``)."""
    return bool(row.stopped_by_user)  # type: ignore[attr-defined]


def log_page(thread: Thread, q: LogQuery) -> tuple[list[dict[str, Any]], int, bool]:
    """A page of the thread's logs; with ``q.threads`` (``includeDescendants``) each row
    also says which thread it is of (``thread_id``)."""
    threads = q.threads or [thread.pk]
    qs = with_stops(Log.objects.filter(thread=thread))
    narrowed = q.ids is not None or q.message_ids is not None
    if q.ids is not None:
        qs = qs.filter(pk__in=[p for p in (parse_uuid(i) for i in q.ids[:MAX_IDS]) if p])
    if q.message_ids is not None:
        pks = [p for p in (parse_uuid(i) for i in q.message_ids[:MAX_IDS]) if p]
        if q.include_workblocks:
            pks = workblock_ids(thread.pk, pks)
        qs = qs.filter(message_id__in=pks)
    if q.threads is not None:
        if narrowed:
            seeds = qs.values_list("pk", flat=True)
            picked = log_descendant_ids(threads, seeds)
            qs = with_stops(Log.objects.filter(thread_id__in=threads, pk__in=picked))
        else:
            qs = with_stops(Log.objects.filter(thread_id__in=threads))
    total = qs.count()
    ordering = "created_at" if q.order == "asc" else "-created_at"
    rows = list(qs.order_by(ordering)[q.offset : q.offset + q.limit])
    items = [wire.log_item(r, stopped=log_stopped(r)) for r in rows]
    if q.threads is not None:
        for item, row in zip(items, rows, strict=True):
            item["thread_id"] = str(row.thread_id)
    return items, total, q.offset + len(rows) < total


def visible_subtree(thread: Thread, user: Any) -> list[uuid.UUID]:
    """The thread and its descendant threads (subagent children, theirs…) ``user`` may
    view, parents first, at most ``MAX_SUBTREE`` below it; a child the user may not view
    hides its own descendants too."""
    ordered = [thread.pk]
    frontier = [thread.pk]
    while frontier and len(ordered) <= MAX_SUBTREE:
        rows = Thread.objects.filter(parent_id__in=frontier).order_by("created_at")
        children = [
            pk
            for pk, owner_id in rows.values_list("pk", "owner_id")
            if pk not in ordered and may_use_thread(user, owner_id, "view")
        ]
        ordered.extend(children)
        frontier = children
    return ordered[: MAX_SUBTREE + 1]


def log_row(thread: Thread, log_id: str) -> Log:
    """One log of ``thread`` (a row of ``with_stops``); ``NotFound`` for any other."""
    pk = parse_uuid(log_id)
    row = with_stops(Log.objects.filter(thread=thread, pk=pk)).first() if pk else None
    if row is None:
        raise NotFound(f"Log not found: {log_id}")
    return row


def log_detail(
    thread: Thread, log_id: str, redact: Callable[[Any], Any] | None = None
) -> dict[str, Any]:
    row = log_row(thread, log_id)
    source = (
        Message.objects.filter(thread=thread, pk=row.message_id).first() if row.message_id else None
    )
    return wire.log_detail(row, source, redact, stopped=log_stopped(row))


def _f(value: Decimal | None) -> float:
    return float(value or 0)


def thread_cost(thread: Thread) -> dict[str, Any]:
    """The recursive cost summary over the thread and its descendants (at most 200)."""
    subtree = thread_subtree(thread)
    truncated = len(subtree) > MAX_SUBTREE + 1
    subtree = subtree[: MAX_SUBTREE + 1]
    logs = Log.objects.filter(thread_id__in=subtree, kind=Log.Kind.LLM)
    per_model = (
        logs.values("model_id", "model")
        .annotate(
            total=Sum("cost_total"),
            input=Sum("cost_input"),
            cached=Sum("cost_cached"),
            output=Sum("cost_output"),
            requests=Count("id"),
            messages=Count("message_id", distinct=True),
        )
        .order_by()
    )
    breakdown = []
    by_model_avg: dict[str, dict[str, Any]] = {}
    for row in per_model:
        name = row["model_id"] or row["model"] or "unknown"
        total = _f(row["total"])
        breakdown.append(
            {
                "modelName": name,
                "totalCost": total,
                "inputCost": _f(row["input"]),
                "cachedCost": _f(row["cached"]),
                "outputCost": _f(row["output"]),
                "routerFeeCost": 0.0,
                "requestCount": row["requests"],
                "avgCostPerRequest": total / row["requests"] if row["requests"] else 0.0,
            }
        )
        by_model_avg[name] = {
            "avgCost": total / row["messages"] if row["messages"] else 0.0,
            "messageCount": row["messages"],
        }
    breakdown.sort(key=lambda b: b["totalCost"], reverse=True)
    per_thread = _thread_costs(thread, subtree, logs)
    sums = logs.aggregate(
        total=Sum("cost_total"),
        input=Sum("cost_input"),
        cached=Sum("cost_cached"),
        output=Sum("cost_output"),
        requests=Count("id"),
        messages=Count("message_id", distinct=True),
        unknown=Count("id", filter=Q(cost_known=False)),
    )
    total = _f(sums["total"])
    return {
        "totalCost": total,
        "inputCost": _f(sums["input"]),
        "cachedCost": _f(sums["cached"]),
        "outputCost": _f(sums["output"]),
        "routerFeeCost": 0.0,
        "ownCost": next((t["totalCost"] for t in per_thread if t["isRoot"]), 0.0),
        "requestCount": sums["requests"],
        "messageCount": sums["messages"],
        "avgCostPerMessage": total / sums["messages"] if sums["messages"] else 0.0,
        "modelBreakdown": breakdown,
        "avgCostPerMessageByModel": by_model_avg,
        "threads": per_thread,
        "truncated": truncated,
        # Ours: requests whose model had no known price; the sums above leave them out.
        "unknownCostRequests": sums["unknown"],
    }


def _thread_costs(root: Thread, subtree: list[uuid.UUID], logs: QuerySet[Log]) -> list[dict]:
    sums = {
        r["thread_id"]: r
        for r in logs.values("thread_id")
        .annotate(
            total=Sum("cost_total"),
            input=Sum("cost_input"),
            cached=Sum("cost_cached"),
            output=Sum("cost_output"),
            requests=Count("id"),
        )
        .order_by()
    }
    threads = Thread.objects.select_related("agent").in_bulk(subtree)
    out = []
    for pk in subtree:
        row, t = sums.get(pk), threads.get(pk)
        if t is None or (pk != root.pk and not row):
            continue
        out.append(
            {
                "threadId": str(pk),
                "agentName": t.agent.name,
                "threadName": t.display_name or None,
                "parent": str(t.parent_id) if t.parent_id else None,
                "isRoot": pk == root.pk,
                "totalCost": _f(row["total"]) if row else 0.0,
                "inputCost": _f(row["input"]) if row else 0.0,
                "cachedCost": _f(row["cached"]) if row else 0.0,
                "outputCost": _f(row["output"]) if row else 0.0,
                "routerFeeCost": 0.0,
                "requestCount": row["requests"] if row else 0,
            }
        )
    return out


# --- effects, subagents, values, files, env ------------------------------------------------


def effect_page(thread: Thread, limit: int, offset: int) -> dict[str, Any]:
    """Pending/processing first (by due time), then history newest first."""
    upcoming_states = (ScheduledEffect.Status.PENDING, ScheduledEffect.Status.PROCESSING)
    base = ScheduledEffect.objects.filter(thread=thread)
    upcoming = list(base.filter(status__in=upcoming_states).order_by("due_at", "created_at"))
    history = base.exclude(status__in=upcoming_states).order_by("-created_at")
    total = len(upcoming) + history.count()
    page = upcoming[offset : offset + limit]
    rest = limit - len(page)
    if rest > 0:
        skip = max(0, offset - len(upcoming))
        page += list(history[skip : skip + rest])
    return {
        "effects": [wire.effect_run(r) for r in page],
        "total": min(total, 1001),
        "upcomingCount": sum(1 for r in upcoming if r.status == ScheduledEffect.Status.PENDING),
        "limit": limit,
        "offset": offset,
    }


def effect_in_thread(thread: Thread, effect_id: str) -> ScheduledEffect | None:
    pk = parse_uuid(effect_id)
    return ScheduledEffect.objects.filter(thread=thread, pk=pk).first() if pk else None


def value_get(thread: Thread, key: str) -> ThreadValue:
    row = ThreadValue.objects.filter(thread=thread, key=key).first()
    if row is None:
        raise NotFound(f"Key not found: {key}")
    return row


def value_page(thread: Thread, search: str, limit: int, offset: int) -> tuple[list, int]:
    qs = ThreadValue.objects.filter(thread=thread)
    if search:
        qs = qs.filter(Q(key__icontains=search) | Q(value__icontains=search))
    total = qs.count()
    rows = list(qs.order_by("key")[offset : offset + limit])
    return rows, total


def file_at(thread: Thread, path: str) -> ThreadFile | None:
    return ThreadFile.objects.filter(thread=thread, path=path).first()


def file_listing(thread: Thread, path: str) -> list[ThreadFile]:
    prefix = "/" if path == "/" else path + "/"
    depth = prefix.count("/")
    rows = ThreadFile.objects.filter(thread=thread, path__startswith=prefix).order_by("path")
    return [r for r in rows if r.path.count("/") == depth and r.path != path]


def file_stats(thread: Thread) -> dict[str, int]:
    agg = ThreadFile.objects.filter(thread=thread, is_directory=False).aggregate(
        size=Sum("size"), count=Count("id")
    )
    return {"totalSize": agg["size"] or 0, "fileCount": agg["count"] or 0}


def env_variables(scope: str, *, user: Any = None, thread: Thread | None = None) -> list[dict]:
    """Names, types and times of one scope's env values; text values only (secrets write-only)."""
    qs = EnvValue.objects.filter(scope=scope)
    if scope == EnvValue.Scope.USER:
        qs = qs.filter(user=user)
    if scope == EnvValue.Scope.THREAD:
        qs = qs.filter(thread=thread)
    out = []
    for row in qs.order_by("key"):
        item: dict[str, Any] = {
            "name": row.key,
            "type": row.value_type,
            "created_at": wire.seconds(row.created_at),
            "updated_at": wire.seconds(row.updated_at),
        }
        if row.value_type == EnvValue.Type.TEXT:
            item["value"] = row.value
        out.append(item)
    return out


def thread_env_types(thread: Thread) -> dict[str, str]:
    return dict(
        EnvValue.objects.filter(scope=EnvValue.Scope.THREAD, thread=thread)
        .order_by("key")
        .values_list("key", "value_type")
    )


def spend_since(start: datetime, *, threads_of: Q | None = None) -> Decimal:
    """Total cost (USD) of the logs written since ``start`` (in the threads ``threads_of``
    selects, e.g. ``Q(owner_id=…)``; all threads when ``None``).

    Log has no index on ``created_at`` alone; its (thread, created_at) index serves this
    instead. A log is written inside a session, and releasing a session stamps its
    thread's ``last_activity_at`` (an indexed column), so every log since ``start``
    belongs to a thread active since then or to a session still running.
    """
    threads = (
        Thread.objects.filter(threads_of or Q())
        .filter(Q(last_activity_at__gte=start) | Q(sessions__status__in=ACTIVE_SESSION))
        .values("pk")
    )
    start_us = int(start.timestamp() * 1_000_000)
    total = Log.objects.filter(
        thread__in=threads, created_at__gte=start_us, created_at__lte=now_us()
    ).aggregate(total=Sum("cost_total"))["total"]
    return total or Decimal(0)
