"""Creating a thread: the engine runs it (so the agent's ``after_thread_created`` hooks run),
the services check before and record after (``services.threads.changes``).

This lives outside ``services`` because it drives the engine: services decide, the
orchestration (this module, the runner, the executors) runs; see ``agents_app/base/dispatch.py``.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync

from agents_app import wire
from agents_app.bridge.pinned import NewestDefinitions
from agents_app.bridge.store import DjangoStore
from agents_app.models import Agent, Thread
from agents_app.orchestration.engines import with_engine
from agents_app.services.threads import changes as thread_service
from agents_app.services.threads.idempotency import (
    Answer,
    IdempotencyRequest,
    idempotent_complete,
    idempotent_release,
    idempotent_reserve,
)
from runtime.engine import Engine
from runtime.store.protocol import ThreadRecord


class _NewThreadStore(NewestDefinitions, DjangoStore):
    """The creation reads its agent's definitions as its first session will: the newest
    versions, from the process's cache while nothing changed (a new chat waits for this
    before its first post: the agent and its prompt were seven statements, now the stamp).
    The agent's row the caller read is the one the new thread points to: no read of it again."""

    def __init__(self, agent: Agent) -> None:
        super().__init__()
        self.pinned_agent, self.agent_row = agent.name, agent


def thread_create(
    *,
    user: Any,
    agent_name: str,
    tags: list[str] | None = None,
    env: dict[str, str] | None = None,
    env_types: dict[str, str] | None = None,
    agent: Agent | None = None,
) -> Thread:
    """Create a thread owned by ``user`` and run the agent's ``after_thread_created`` hooks
    (``agent``: the row of ``agent_name``, when the caller has read it already)."""
    agent, tags, patch = thread_service.thread_creation_check(
        agent_name=agent_name, tags=tags, env=env, env_types=env_types, agent=agent
    )
    owner = str(user.pk) if user is not None and user.pk else None

    async def create(engine: Engine) -> ThreadRecord:
        return await engine.create_thread(
            agent.name, user_id=owner, tags=tags, env=patch.replace or {}
        )

    record = async_to_sync(with_engine)(create, _NewThreadStore(agent))
    return thread_service.thread_created(thread_id=record.id, agent=agent, patch=patch)


def thread_create_once(*, idempotency: IdempotencyRequest | None, **fields: Any) -> Answer:
    """``thread_create`` behind an ``Idempotency-Key`` (user-wide): a retry with the same key
    gets the first answer and creates nothing (``services.threads.idempotency``, reservations)."""
    if idempotency is not None:
        replay = idempotent_reserve(idempotency, operation="thread_create")
        if replay is not None:
            return Answer(replay.status_code, replay.response, replayed=True)
    try:
        thread = thread_create(**fields)
    except BaseException:
        if idempotency is not None:
            idempotent_release(idempotency)
        raise
    answer = Answer(200, wire.thread_created(thread))
    if idempotency is not None:
        idempotent_complete(idempotency, status_code=200, response=answer.response)
    return answer
