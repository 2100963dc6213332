"""``InlineHost``: a ``SubagentHost`` that runs woken threads as asyncio tasks of this loop.

For engine tests and embedded use without a database: a woken thread gets a
task that runs sessions on its queued messages until none are left. A thread
whose session this engine is running already is skipped; the engine wakes it
again when that session ends (``Subagents.session_ended``).

    host = InlineHost()
    engine = Engine(store, sink, subagent_host=host)
    host.engine = engine
    ...
    await host.idle()   # every background session has ended
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from runtime.core.outcomes import SessionResult
    from runtime.delegation.subagents import Subagents
    from runtime.deps import Deps

logger = logging.getLogger("runtime.delegation.inline_host")


class HostedEngine(Protocol):
    """What the host runs woken threads with (``runtime.engine.Engine``, which builds on this
    module's layer)."""

    deps: Deps
    subagents: Subagents

    async def run_queued(self, thread_id: str) -> SessionResult | None: ...


class InlineHost:
    """Runs sessions of woken threads in background tasks (one task per thread at a time)."""

    def __init__(self, engine: HostedEngine | None = None) -> None:
        self.engine = engine
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self.errors: list[BaseException] = []

    async def wake(self, thread_id: str) -> None:
        """Start a task for the thread, or tell its running task to look again."""
        task = self.tasks.get(thread_id)
        if task is not None and not task.done():
            self._again.add(thread_id)
            return
        self.tasks[thread_id] = asyncio.get_running_loop().create_task(self._drain(thread_id))

    async def _drain(self, thread_id: str) -> None:
        assert self.engine is not None, "InlineHost.engine is not set"
        while True:
            # A wake that arrives while we read the queue must not be lost.
            self._again.discard(thread_id)
            before = await self._last_session(thread_id)
            try:
                result = await self.engine.run_queued(thread_id)
            except Exception as exc:  # kept for tests: a failed background session must be visible
                logger.exception("background session of %s failed", thread_id)
                self.errors.append(exc)
                await self._failed(thread_id, before, type(exc).__name__)
                return
            if result is None and thread_id not in self._again:
                return

    async def _failed(self, thread_id: str, before: tuple[str, bool] | None, detail: str) -> None:
        """As the production runner does: a child whose session finished before the error gets
        its end settled; one whose run died reports a failure to its parent."""
        assert self.engine is not None
        after = await self._last_session(thread_id)
        if after is not None and after[1] and after != before:
            await self.engine.subagents.recover(thread_id)
        else:
            await self.engine.subagents.crashed(thread_id, detail, uuid.uuid4().hex)

    async def _last_session(self, thread_id: str) -> tuple[str, bool] | None:
        assert self.engine is not None
        progress = await self.engine.deps.store.load_progress(thread_id)
        return (progress.session_id, progress.finished) if progress else None

    async def idle(self) -> None:
        """Wait until no background session runs (new ones started meanwhile included)."""
        while True:
            running = [t for t in self.tasks.values() if not t.done()]
            if not running:
                break
            await asyncio.gather(*running)
        if self.errors:
            raise self.errors[0]
