"""The definitions of a running session, read at the versions it started with.

``PinnedDefinitions`` is mixed into the store a claimed session writes through
(``runner.ClaimedStore``): the first definition the engine asks for fixes the session's
versions (``services.definitions.versions.session_pins``: its agent and everything that
agent can reach), and every later read, also after a park or on another worker, returns
those versions. Each log row the session commits names them (``Log.definition_versions``).
A name the pins do not hold (not reachable when the session started) is read as saved now.

``NewestDefinitions`` reads an agent's newest versions the same way outside a session (a
thread's creation): from this process's cache of them (``versions.pins_for``) while the
definitions' stamp says nothing changed, one statement instead of a read of each row.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from agents_app.services.definitions import versions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.store.protocol import Commit


class PinnedDefinitions:
    """Store mixin; needs ``pinned_session_id`` and a store with the ``get_*`` methods."""

    pinned_session_id: str
    pinned_thread_id: str
    _pins: versions.Pins | None = None
    _pins_read: bool = False

    async def session_pins(self) -> versions.Pins | None:
        if not self._pins_read:
            self._pins = await sync_to_async(versions.session_pins)(self.pinned_session_id)
            self._pins_read = True
            self._parsed: dict[tuple[str, str], Any] = {}
        return self._pins

    async def _pinned(self, kind: str, name: str) -> Any:
        pins = await self.session_pins()
        if pins is None:
            return None
        if (kind, name) not in self._parsed:
            data: dict[str, Any] | None = pins.loaded.get((kind, name))
            if data is None:  # not read with the pins: one hop to the database thread
                data = await sync_to_async(versions.pinned_definition)(pins, kind, name)
            self._parsed[(kind, name)] = (
                versions.parse_definition(kind, data) if data is not None else None
            )
        return self._parsed[(kind, name)]

    async def get_agent(self, name: str) -> AgentDefinition | None:
        pinned = await self._pinned("agents", name)
        if pinned is not None:
            return pinned  # type: ignore[no-any-return]
        return await super().get_agent(name)  # type: ignore[misc, no-any-return]

    async def get_prompt(self, name: str) -> PromptDefinition | None:
        pinned = await self._pinned("prompts", name)
        if pinned is not None:
            return pinned  # type: ignore[no-any-return]
        return await super().get_prompt(name)  # type: ignore[misc, no-any-return]

    async def get_model(self, name: str) -> ModelDefinition | None:
        pinned = await self._pinned("models", name)
        if pinned is not None:
            return pinned  # type: ignore[no-any-return]
        return await super().get_model(name)  # type: ignore[misc, no-any-return]

    def stamp_versions(self, thread_id: str, commit: Commit) -> None:
        """Name the pinned versions on each log row of ``commit`` (in place)."""
        pins = self._pins
        if pins is None or not commit.logs:
            return
        agent = pins.agent if thread_id == self.pinned_thread_id else None
        for log in commit.logs:
            if log.definition_versions is None:
                log.definition_versions = pins.stamp(agent, log.prompt_name, log.model)


class NewestDefinitions(PinnedDefinitions):
    """Store mixin: the newest versions of ``pinned_agent`` and what it reaches, as a session
    of it starting now would pin them (``versions.pins_for``: cached while nothing changed)."""

    pinned_agent: str

    async def session_pins(self) -> versions.Pins | None:
        if not self._pins_read:
            self._pins = await sync_to_async(versions.pins_for)(self.pinned_agent, None)
            self._pins_read = True
            self._parsed = {}
        return self._pins
