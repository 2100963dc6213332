"""How many sessions one worker loop starts at once (``STUDIO_SESSION_STARTS_AT_ONCE``).

Starting a session (claim, plan, pins, history, the step's first rows) is a dozen database
hops on the worker's one database thread plus the engine's set-up on its event loop. When
hundreds of sessions arrive together and all start at once, every start waits behind every
other one's hops in turn (a convoy): none reaches its first request until nearly all have,
then hundreds begin to stream in the same second, and the tokens of the sessions already
streaming wait behind all of it. With a few slots, the same work is done in order: the
first sessions stream after a fraction of the burst, and streams begin evenly (issue #21).

A session holds its slot from before its claim until its first LLM request goes out, or
it ends, or ``HOLD_LIMIT`` seconds pass, whichever comes first. Only a job's first session
waits: the thread's next queued message is claimed with the previous session's release, and
a claimed row waiting here would have no heartbeat. The limit means a start
that waits on something slow (a hook calling out, a session started from a tool that waits
for another session) can only ever delay others, never lock the gate.
"""

from __future__ import annotations

import asyncio
import weakref

from django.conf import settings

HOLD_LIMIT = 2.0


class StartSlot:
    """A place in the gate; ``release()`` may be called any number of times."""

    def __init__(self, semaphore: asyncio.Semaphore | None) -> None:
        self._semaphore = semaphore
        self._timer: asyncio.TimerHandle | None = None
        if semaphore is not None:
            self._timer = asyncio.get_running_loop().call_later(HOLD_LIMIT, self.release)

    def release(self) -> None:
        semaphore, self._semaphore = self._semaphore, None
        if semaphore is None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        semaphore.release()

    @property
    def held(self) -> bool:
        return self._semaphore is not None


class StartGate:
    """At most ``size`` slots held at once on one event loop (0: no limit)."""

    def __init__(self, size: int) -> None:
        self._semaphore = asyncio.Semaphore(size) if size > 0 else None

    async def enter(self) -> StartSlot:
        if self._semaphore is None:
            return StartSlot(None)
        await self._semaphore.acquire()
        return StartSlot(self._semaphore)


# Weak: a closed loop (every async test has its own) takes its gate with it.
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StartGate] = (
    weakref.WeakKeyDictionary()
)


def start_gate() -> StartGate:
    """This loop's gate (sized by the setting when the loop first starts a session)."""
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = StartGate(int(settings.STUDIO_SESSION_STARTS_AT_ONCE))
    return gate
