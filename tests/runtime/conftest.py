"""Fixtures for engine tests: no database, no network.

``store`` is the store under test. Today it is the in-memory store; the Django
store can be added as a second parameter. Tests only use the store protocol,
plus the few set-up operations in ``Harness`` (defining agents/prompts/models,
pressing stop, user/instance env), which each store implementation provides.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from runtime.core.messages import Message
from runtime.core.spec import (
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    ScriptedResponse,
    SideConfig,
)
from runtime.engine import Engine, NewMessage
from runtime.loop.session import SessionResult
from runtime.providers import ProviderRegistry
from runtime.providers.test_provider import TestProvider, TestScript
from runtime.store.events import ListSink
from runtime.store.memory import MemoryStore
from runtime.store.protocol import MessageQuery, Store, ThreadRecord
from runtime.tools.registry import AnyDefinition, Registry


class Harness:
    """Set-up operations a test needs beyond the store protocol."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def define(self, *definitions: AgentDefinition | PromptDefinition | ModelDefinition) -> None:
        """Make definitions available to the store's ``get_agent``/``get_prompt``/``get_model``."""
        assert isinstance(self.store, MemoryStore)
        self.store.add(*definitions)

    def press_stop(self, thread_id: str) -> None:
        """Set the thread's persistent stop flag (what ``POST …/stop`` does)."""
        assert isinstance(self.store, MemoryStore)
        self.store.set_stopped(thread_id)

    def set_user_env(self, user_id: str, name: str, value: str, kind: str = "secret") -> None:
        """An env value of the user account tier."""
        assert isinstance(self.store, MemoryStore)
        self.store.user_env[user_id][name] = (value, kind)  # type: ignore[assignment]

    def set_instance_env(self, name: str, value: str, kind: str = "secret") -> None:
        """An env value of the instance tier."""
        assert isinstance(self.store, MemoryStore)
        self.store.instance_env[name] = (value, kind)  # type: ignore[assignment]


@pytest.fixture(params=["memory"])
def store(request: pytest.FixtureRequest) -> Store:
    """The store under test (parametrize here to run every engine test on another store)."""
    return MemoryStore()


@pytest.fixture
def harness(store: Store) -> Harness:
    """Set-up helpers for ``store``."""
    return Harness(store)


def side(prompt: str = "main", **options: Any) -> SideConfig:
    """A side configuration."""
    return SideConfig(prompt=prompt, **options)


def agent(name: str = "agent", prompt: str = "main", **options: Any) -> AgentDefinition:
    """An ai_human agent whose side A uses ``prompt`` (side options via ``side_a=``)."""
    options.setdefault("side_a", side(prompt))
    return AgentDefinition(name=name, **options)


def prompt(
    name: str = "main", model: str = "m", text: Any = "You are helpful.", **options: Any
) -> PromptDefinition:
    """A prompt (chat history on by default: most tests want the model to see the thread)."""
    options.setdefault("include_chat", True)
    options.setdefault("include_past_tools", True)
    return PromptDefinition(name=name, model=model, prompt=text, **options)


class World:
    """One engine over the store under test, with scripted models and a recording sink."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.store = harness.store
        self.sink = ListSink()
        self.registry = Registry()
        self.providers = ProviderRegistry()
        self.scripted: dict[str, TestProvider] = {}
        self.sleeps: list[float] = []  # the attempt ladder's backoffs, not actually waited
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        """The engine (built on first use, after the registry is filled)."""
        if self._engine is None:
            self._engine = Engine(
                self.store,
                self.sink,
                registry=self.registry,
                providers=self.providers,
                sleep=self._sleep,
            )
        return self._engine

    async def _sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def define(self, *definitions: AgentDefinition | PromptDefinition | ModelDefinition) -> None:
        """Add definitions."""
        self.harness.define(*definitions)

    def register(self, *definitions: AnyDefinition) -> None:
        """Add code definitions (tools, hooks …)."""
        self.registry.add(*definitions)

    def script(
        self, model: str, script: TestScript | Iterable[ScriptedResponse | dict[str, Any]]
    ) -> TestProvider:
        """Define a ``test`` model and pin it to a provider recording its requests."""
        self.define(ModelDefinition(name=model, provider="test", model="scripted"))
        provider = TestProvider(script)
        self.providers.override(model, provider)
        self.scripted[model] = provider
        return provider

    async def thread(self, agent_name: str = "agent", **options: Any) -> ThreadRecord:
        """A new thread."""
        return await self.engine.create_thread(agent_name, **options)

    async def run(self, thread_id: str, text: str | None = None, **options: Any) -> SessionResult:
        """Run a session (with a user message when ``text`` is given)."""
        message = NewMessage(text) if text is not None else None
        return await self.engine.run_session(thread_id, message=message, **options)

    async def chat(
        self, text: str, agent_name: str = "agent"
    ) -> tuple[ThreadRecord, SessionResult]:
        """A new thread and one session started by ``text``."""
        thread = await self.thread(agent_name)
        return thread, await self.run(thread.id, text)

    async def messages(self, thread_id: str, *, depth: int | None = None) -> list[Message]:
        """Every message of a thread (silent ones too), oldest first; ``depth=0`` for top level."""
        query = MessageQuery(limit=None, include_silent=True, max_depth=depth)
        return (await self.store.list_messages(thread_id, query)).messages

    def requests(self, model: str = "m") -> list[Any]:
        """What the scripted model was sent."""
        return self.scripted[model].requests


@pytest.fixture
def world(harness: Harness) -> World:
    """An engine world over the store under test."""
    return World(harness)
