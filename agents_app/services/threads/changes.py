"""Thread writes: the checks before and the bookkeeping after a creation (the engine itself,
which runs ``after_thread_created`` hooks, is driven by ``agents_app.orchestration.thread_creation``),
update (tags, agent, env) and delete (the whole subtree).

Registry events go out on commit (``thread_created``/``updated``/``deleted``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents_app import selectors
from agents_app.base.errors import Invalid, NotFound
from agents_app.broadcast.events import send_registry
from agents_app.db.raw_sql import model_from_row, model_select, prepared_cursor, row_by_uuid
from agents_app.models import Agent, EnvValue, PromptTool, Thread
from agents_app.services.env import writes as env_service
from agents_app.services.threads import files as thread_files

logger = logging.getLogger(__name__)

TAG_MAX = 200
TAGS_MAX = 100
PREVIEW_MAX = 140


def clean_tags(tags: Any) -> list[str]:
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise Invalid("tags must be an array of strings")
    if len(tags) > TAGS_MAX or any(len(t) > TAG_MAX or "\x00" in t for t in tags):
        raise Invalid(f"tags: at most {TAGS_MAX} tags of at most {TAG_MAX} characters")
    return list(tags)


def preview_of(text: str) -> str:
    """The reference's preview: whitespace collapsed, at most 140 characters with a trailing …"""
    collapsed = " ".join(text.split())
    if len(collapsed) <= PREVIEW_MAX:
        return collapsed
    return collapsed[: PREVIEW_MAX - 1].rstrip() + "…"


def _agent(name: str) -> Agent:
    agent = Agent.objects.filter(name=name).first() if len(name) <= 128 else None
    if agent is None:
        raise NotFound(f"Agent not found: {name}")
    return agent


def _announce(kind: str, thread_id: Any, owner_id: Any) -> None:
    def send() -> None:
        item = selectors.registry_thread(thread_id)
        if item is not None:
            send_registry({"type": kind, "thread": item}, owner_id)

    transaction.on_commit(send)


def thread_creation_check(
    *,
    agent_name: str,
    tags: list[str] | None = None,
    env: dict[str, str] | None = None,
    env_types: dict[str, str] | None = None,
    agent: Agent | None = None,
) -> tuple[Agent, list[str], env_service.EnvPatch]:
    """Validate a thread creation before the engine runs it: the agent, tags and env
    (``agent``: the row of ``agent_name`` when the caller has read it already)."""
    if agent is None or agent.name != agent_name:
        agent = _agent(agent_name)
    patch = env_service.clean_patch(
        env_service.EnvPatch(replace=env or {}, replace_types=env_types or {})
    )
    return agent, clean_tags(tags or []), patch


def thread_created(*, thread_id: Any, agent: Agent, patch: env_service.EnvPatch) -> Thread:
    """What follows the engine's ``create_thread``: env value types, the registry event, and
    the first session when the agent starts immediately (``agents_app.orchestration.thread_creation``)."""
    text_keys = [k for k, t in (patch.replace_types or {}).items() if t == EnvValue.Type.TEXT]
    if text_keys:
        EnvValue.objects.filter(
            scope=EnvValue.Scope.THREAD, thread_id=thread_id, key__in=text_keys
        ).update(value_type=EnvValue.Type.TEXT)
    thread = _created_thread(thread_id, agent)
    _announce("thread_created", thread.pk, thread.owner_id)
    if _starts_immediately(agent):
        from agents_app.services.sessions.lifecycle import thread_continue

        # The first AI side: side B when a person is on side A (spec 0.2.0).
        thread_continue(thread=thread, side="b" if agent.side_a_human else "a")
    return thread


# Fixed statements: every thread's creation runs both (the ORM compiled them, the created
# thread's with two joins, at each creation: issue #58).
_CREATED_SQL = f"{model_select(Thread, 't')} WHERE t.id = %s"
_IMMEDIATE_SQL = (
    f"SELECT 1 FROM {PromptTool._meta.db_table} "
    "WHERE prompt_id = %s AND immediate = %s AND optional = %s LIMIT 1"
)


def _created_thread(thread_id: Any, agent: Agent) -> Thread:
    """The thread just created, its agent and origin agent the row the creation used."""
    row = row_by_uuid(_CREATED_SQL, thread_id)
    if row is None:  # created just now: cannot happen
        raise NotFound(f"Thread not found: {thread_id}")
    thread: Thread = model_from_row(Thread, row)
    if thread.agent_id == agent.pk:
        thread.agent = agent
    if thread.origin_agent_id == agent.pk:
        thread.origin_agent = agent
    return thread


def _starts_immediately(agent: Agent) -> bool:
    # The first AI side's prompt tools marked ``immediate`` run at creation (gated ones are
    # not evaluated).
    first = agent.side_a_prompt_id or agent.side_b_prompt_id
    if first is None:
        return False
    with prepared_cursor() as cursor:
        cursor.execute(_IMMEDIATE_SQL, [first, True, ""])
        return cursor.fetchone() is not None


@dataclass
class ThreadChanges:
    tags: list[str] | None = None
    agent_name: str | None = None
    env: env_service.EnvPatch | None = None


@transaction.atomic
def thread_update(*, thread: Thread, changes: ThreadChanges, actor: Any) -> dict[str, Any]:
    """Apply tags / agent / env changes; ``Invalid`` when nothing valid was given."""
    if changes.tags is None and changes.agent_name is None and changes.env is None:
        raise Invalid("No valid fields to update")
    fields = []
    if changes.tags is not None:
        thread.tags = clean_tags(changes.tags)
        fields.append("tags")
    if changes.agent_name is not None:
        agent = _agent(changes.agent_name)
        if agent.type != Agent.Type.AI_HUMAN:
            raise Invalid("Only agents with a human-backed side can be assigned to threads")
        thread.agent = agent
        fields.append("agent")
    if fields:
        thread.last_activity_at = timezone.now()
        thread.save(update_fields=[*fields, "last_activity_at"])
    if changes.env is not None and not changes.env.is_empty():
        env_service.env_apply(
            scope=EnvValue.Scope.THREAD, patch=changes.env, thread=thread, actor=actor
        )
    _announce("thread_updated", thread.pk, thread.owner_id)
    return {
        "id": str(thread.pk),
        "agent_id": thread.agent.name,
        "user_id": str(thread.owner_id) if thread.owner_id else None,
        "tags": thread.tags,
        "env_types": selectors.thread_env_types(thread),
        "created_at": int(thread.created_at.timestamp()),
    }


@transaction.atomic
def thread_delete(*, thread: Thread) -> list[str]:
    """Delete the thread and every descendant; returns their ids (parents first)."""
    subtree = selectors.thread_subtree(thread)
    owners = dict(Thread.objects.filter(pk__in=subtree).values_list("pk", "owner_id"))
    blobs = thread_files.blob_names_of_threads(subtree)  # chunk blobs too
    # Children first, so no row is ever left pointing at a deleted parent.
    for pk in reversed(subtree):
        Thread.objects.filter(pk=pk).delete()

    def after() -> None:
        from django.core.files.storage import default_storage

        for name in blobs:
            try:
                default_storage.delete(name)
            except OSError:
                logger.warning("could not delete %s", name, exc_info=True)
        for pk in subtree:
            send_registry({"type": "thread_deleted", "threadId": str(pk)}, owners.get(pk))

    transaction.on_commit(after)
    return [str(pk) for pk in subtree]
