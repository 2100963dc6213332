"""Definitions by name, read through the store once per session."""

from __future__ import annotations

from typing import TypeVar

from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.store.protocol import Store

T = TypeVar("T")


class DefinitionNotFound(LookupError):
    """An agent, prompt or model name that does not exist."""


class DefinitionLoader:
    """Caches the definitions a session uses (they may change between sessions, not within one)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._agents: dict[str, AgentDefinition | None] = {}
        self._prompts: dict[str, PromptDefinition | None] = {}
        self._models: dict[str, ModelDefinition | None] = {}

    async def find_agent(self, name: str) -> AgentDefinition | None:
        """The agent, or ``None``."""
        if name not in self._agents:
            self._agents[name] = await self._store.get_agent(name)
        return self._agents[name]

    async def find_prompt(self, name: str) -> PromptDefinition | None:
        """The prompt, or ``None``."""
        if name not in self._prompts:
            self._prompts[name] = await self._store.get_prompt(name)
        return self._prompts[name]

    async def find_model(self, name: str) -> ModelDefinition | None:
        """The model, or ``None``."""
        if name not in self._models:
            self._models[name] = await self._store.get_model(name)
        return self._models[name]

    async def agent(self, name: str) -> AgentDefinition:
        """The agent; ``DefinitionNotFound`` when missing."""
        return _required(await self.find_agent(name), "Agent", name)

    async def prompt(self, name: str) -> PromptDefinition:
        """The prompt; ``DefinitionNotFound`` when missing."""
        return _required(await self.find_prompt(name), "Prompt", name)

    async def model(self, name: str) -> ModelDefinition:
        """The model; ``DefinitionNotFound`` when missing."""
        return _required(await self.find_model(name), "Model", name)


def _required(value: T | None, kind: str, name: str) -> T:
    if value is None:
        raise DefinitionNotFound(f"{kind} not found: {name}")
    return value
