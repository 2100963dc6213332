"""Run the whole engine test suite (tests/runtime) again over ``DjangoStore``.

The engine tests use the store protocol plus a small ``Harness``; here the
harness writes definitions, env values and the stop flag through the ORM, and
the store is the production ``DjangoStore`` on the test database (PostgreSQL
in the test command).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# The harness sets up rows synchronously from async tests; the engine itself only
# reaches the ORM through sync_to_async inside DjangoStore.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from agents_app.bridge.store import DjangoStore  # noqa: E402
from agents_app.models import EnvValue, Thread  # noqa: E402
from agents_app.models import Message as MessageRow  # noqa: E402
from agents_app.models import QueuedMessage as QueuedMessageRow  # noqa: E402
from agents_app.services.definitions import rows as defs  # noqa: E402
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition  # noqa: E402
from runtime.store.protocol import NewThread, ThreadRecord  # noqa: E402
from tests.runtime.conftest import *  # noqa: E402,F403  (the engine suite's fixtures and helpers)
from tests.runtime.conftest import Harness  # noqa: E402


def _user_id(name: str | None) -> str | None:
    """Engine tests name users ('alice'); the database needs a user row."""
    if name is None:
        return None
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username=name)
    return str(user.pk)


def _username(user_id: str | None) -> str | None:
    if user_id is None:
        return None
    from django.contrib.auth import get_user_model

    return str(get_user_model().objects.get(pk=user_id).get_username())


class DjangoTestStore(DjangoStore):
    """``DjangoStore`` plus the inspection helpers the engine tests use on the memory store."""

    async def create_thread(self, new: NewThread) -> ThreadRecord:
        new.user_id = _user_id(new.user_id)
        return _named(await super().create_thread(new))

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        record = await super().get_thread(thread_id)
        return _named(record) if record else None

    async def get_user(self, user_id: str) -> Any:
        # Records carry the user's name (see ``_named``); the database looks users up by key.
        return await super().get_user(_user_id(user_id) or "")

    def all_messages(self, thread_id: str) -> list[Any]:
        from agents_app.db.rows import engine_message

        return [
            engine_message(m)
            for m in MessageRow.objects.filter(thread_id=thread_id).order_by("created_at")
        ]

    def queued(self, thread_id: str) -> list[Any]:
        return list(QueuedMessageRow.objects.filter(thread_id=thread_id).order_by("created_at"))


def _named(record: ThreadRecord) -> ThreadRecord:
    # Engine tests speak of users by name; the rows hold primary keys.
    record.user_id = _username(record.user_id)
    return record


class DjangoHarness(Harness):
    def define(self, *definitions: AgentDefinition | PromptDefinition | ModelDefinition) -> None:
        # Upsert without cross-reference validation: engine tests define pieces in any order
        # and sometimes on purpose reference what does not exist.
        ordered = sorted(
            definitions, key=lambda d: {ModelDefinition: 0, PromptDefinition: 1}.get(type(d), 2)
        )
        for d in ordered:
            if isinstance(d, ModelDefinition):
                defs.model_from_definition(d)
            elif isinstance(d, PromptDefinition):
                _ensure_model(d.model)
                defs.prompt_from_definition(d)
            else:
                defs.agent_from_definition(d)
        for d in ordered:
            if isinstance(d, ModelDefinition):
                defs.link_model_fallbacks(d)
            elif isinstance(d, PromptDefinition):
                defs.link_prompt_parts(d)
        # A fresh store per definition change: DjangoStore caches definitions per instance.
        self.store._definitions.clear()  # type: ignore[attr-defined]

    def press_stop(self, thread_id: str) -> None:
        Thread.objects.filter(pk=thread_id).update(stopped=True)

    def set_user_env(self, user_id: str, name: str, value: str, kind: str = "secret") -> None:
        row = EnvValue(
            scope=EnvValue.Scope.USER, user_id=_user_id(user_id), key=name, value_type=kind
        )
        row.value = value
        row.save()

    def set_instance_env(self, name: str, value: str, kind: str = "secret") -> None:
        row = EnvValue(scope=EnvValue.Scope.INSTANCE, key=name, value_type=kind)
        row.value = value
        row.save()


def _ensure_model(name: str) -> None:
    from agents_app.models import LanguageModel

    LanguageModel.objects.get_or_create(
        name=name, defaults={"provider": "test", "model": "scripted"}
    )


@pytest.fixture(params=["django"])
def store(
    request: pytest.FixtureRequest, transactional_db: Any, close_thread_connections: Any
) -> Any:
    # As the session runner builds it: commits on the event loop's own connection.
    return DjangoTestStore(async_commits=True)


@pytest.fixture
def harness(store: Any) -> Harness:
    return DjangoHarness(store)


@pytest.fixture
def sync_connection(transactional_db: Any) -> Any:
    """The test's own database connection, as its synchronous fixtures see it."""
    from django.db import connections

    return connections["default"]


@pytest.fixture(autouse=True)
async def one_connection_per_thread(sync_connection: Any) -> Any:
    """The harness writes rows synchronously from the test's coroutine. Django keeps
    connections per asyncio context there, and each test runs in a new context, so each
    would open a new connection (a new PostgreSQL process reading the catalog afresh):
    share the one the test's synchronous fixtures use, which is kept between tests
    (``tests/kept_connections.py``)."""
    from django.db import connections

    connections["default"] = sync_connection
    yield
