"""Effects: scheduled work that runs outside any session (spec ``defineEffect``, ``scheduleEffect``).

Define one in ``agents/effects/<name>.py``::

    class RemindArgs(BaseModel):
        text: str

    async def remind(state, args: RemindArgs) -> None:
        await state.inject_message("assistant", f"Reminder: {args.text}")

    remind_effect = define_effect("Post a reminder", RemindArgs, remind)

and schedule it from a tool, a hook, an endpoint or another effect::

    effect_id = await state.schedule_effect("remind", {"text": "stand up"}, delay_ms=60_000)
    await state.get_scheduled_effects("remind")    # pending runs, by due time
    await state.remove_scheduled_effect(effect_id)  # True: it is now ``agent_canceled``

The engine's part is small: the three ``ThreadState`` calls above (each one
store call, durable when it returns) and ``run_effect``, which a host calls for
a run it has claimed. When runs execute, claiming, retries and recovery belong
to the host (``agents_app``: a database sweep, see docs/effects.md).

Handlers get a ``ThreadState`` with ``execution`` ``None`` and
``state.context["effect_id"]``, the run's id: use it as the idempotency key of
external side effects (a run whose worker died mid-handler runs again).

Run ids scheduled from a tool call (or from an effect handler) are derived
from that call's id (or that run's id) and a counter, so a tool call re-run after
a crash, or a handler run again, schedules the same ids again, and the store
keeps the first (``schedule_effect`` is idempotent on the id).
"""

from __future__ import annotations

import inspect
import json
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ValidationError

from runtime.core.messages import new_id
from runtime.store.events import Frame, event
from runtime.store.protocol import EffectRun
from runtime.store.storable import storable
from runtime.tools.registry import EffectDefinition, call_maybe_async

if TYPE_CHECKING:
    from runtime.deps import Deps
    from runtime.store.recorder import Recorder

EFFECT_ID_KEY = "effect_id"
SCHEDULED_EFFECT_KEY = "scheduled_effect"
_RUN_IDS = uuid.UUID("0b6f6f0e-3c43-4e55-9a3c-5b1f4f7a2c11")


class EffectError(Exception):
    """An effect could not be scheduled or run. ``permanent``: retrying cannot help."""

    permanent = False


class EffectNotFound(EffectError, LookupError):
    """No effect of that name is registered (``Effect not found: <name>``)."""

    permanent = True

    def __init__(self, name: str) -> None:
        super().__init__(f"Effect not found: {name}")
        self.name = name

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0])


class EffectArgsInvalid(EffectError, ValueError):
    """The arguments do not fit the effect's schema, or are not JSON."""

    permanent = True


def is_permanent(exc: BaseException) -> bool:
    """Whether a failed run should not be retried (unknown effect, invalid arguments)."""
    return bool(getattr(exc, "permanent", False))


def describe_error(exc: BaseException) -> str:
    """The text stored on a failed run: ``'RuntimeError: boom'``; our own errors bare."""
    return str(exc) if isinstance(exc, EffectError) else f"{type(exc).__name__}: {exc}"


# --- wire shapes -----------------------------------------------------------------------------


def effect_run_data(run: EffectRun, *, with_args: bool = True) -> dict[str, Any]:
    """The reference's ``EffectRun`` (times in ms); frames leave ``args`` out."""
    data: dict[str, Any] = {
        "id": run.id,
        "name": run.name,
        "scheduledAt": run.scheduled_at,
        "createdAt": run.created_at,
        "status": run.status,
        "attempts": run.attempts,
        "error": run.error or None,
        "completedAt": run.completed_at,
        "manualRun": run.manual_run,
        "manualRunAt": run.manual_run_at,
        "replayedFrom": run.replayed_from,
    }
    if with_args:
        data["args"] = run.args
    return data


def effect_changed(run: EffectRun) -> Frame:
    """The ``event/effect_changed`` frame sent on every status transition."""
    return event("effect_changed", effect_run_data(run, with_args=False))


# --- arguments -------------------------------------------------------------------------------


def encode_args(definition: EffectDefinition, args: Any) -> Any:
    """The JSON to store: ``args`` as given (a pydantic model is dumped), checked first."""
    if isinstance(args, BaseModel):
        args = args.model_dump(mode="json")
    try:
        json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise EffectArgsInvalid(
            f"Effect {definition.name} args must be JSON-serializable: {exc}"
        ) from None
    decode_args(definition, args)
    return args


def decode_args(definition: EffectDefinition, args: Any) -> Any:
    """The handler's ``args``: an instance of the effect's model, or the JSON itself."""
    if definition.args_model is None:
        return args
    try:
        return definition.args_model.model_validate(args if args is not None else {})
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'args'}: {e['msg']}" for e in exc.errors()
        )
        raise EffectArgsInvalid(
            f"Effect {definition.name} args validation failed: {details}"
        ) from None


def retry_delay_ms(attempts: int, base_ms: int, cap_ms: int) -> int:
    """Exponential backoff before attempt ``attempts + 1``: base, 2×base, 4×base … ≤ cap."""
    return int(min(cap_ms, base_ms * 2 ** max(0, attempts - 1)))


# --- ThreadState's effect calls ---------------------------------------------------------------


class Effects:
    """``schedule`` / ``scheduled`` / ``remove`` for one ``ThreadState`` view.

    ``key`` (a tool call id or an effect run id) makes scheduled ids deterministic:
    the n-th run scheduled under one key always gets the same id.
    """

    def __init__(self, deps: Deps, recorder: Recorder, thread_id: str, key: str | None) -> None:
        self._deps, self._recorder, self._thread_id = deps, recorder, thread_id
        self._key = key
        self._count = 0

    def _next_id(self) -> str:
        if self._key is None:
            return new_id()
        self._count += 1
        return str(uuid.uuid5(_RUN_IDS, f"{self._thread_id}/{self._key}/{self._count}"))

    async def schedule(self, name: str, args: Any = None, delay_ms: int = 0) -> str:
        """Store a pending run due ``delay_ms`` from now; its id. Unknown name or bad args:
        ``EffectNotFound`` / ``EffectArgsInvalid``, and nothing is stored."""
        definition = self._deps.registry.effects.get(name)
        if definition is None:
            raise EffectNotFound(name)
        if isinstance(delay_ms, bool) or not isinstance(delay_ms, int | float) or delay_ms < 0:
            raise ValueError(f"delay_ms must be a number ≥ 0, not {delay_ms!r}")
        run = EffectRun(
            id=self._next_id(),
            thread_id=self._thread_id,
            name=name,
            args=encode_args(definition, args),
            scheduled_at=self._deps.clock.now() // 1000 + int(delay_ms),
        )
        stored, created = await self._deps.store.schedule_effect(storable(run))
        if created:
            self._recorder.emit(effect_changed(stored))
        return stored.id

    async def scheduled(self, name: str | None = None) -> list[EffectRun]:
        """Pending runs of the thread (of one effect if ``name``), by due time."""
        return await self._deps.store.list_effects(self._thread_id, name)

    async def remove(self, effect_id: str) -> bool:
        """Cancel a pending run (kept in history as ``agent_canceled``); ``False`` otherwise."""
        changed = await self._deps.store.cancel_effect(self._thread_id, str(effect_id), "agent")
        if changed is None:
            return False
        self._recorder.emit(effect_changed(changed))
        return True


# --- running a claimed run ---------------------------------------------------------------------


class AtRest(Protocol):
    """A thread's ``ThreadState`` at rest, as a handler receives it (``runtime.state``)."""

    context: dict[str, Any]


class EffectHost(Protocol):
    """What running a claimed run needs of the engine (``runtime.engine.Engine``; the engine
    and ``ThreadState`` build on this module): its registry and a thread at rest."""

    deps: Deps

    async def thread_state(self, thread_id: str) -> AtRest: ...


async def run_effect(engine: EffectHost, run: EffectRun) -> None:
    """Run the handler of a claimed run on a ``ThreadState`` at rest; raises what it raised.

    ``EffectNotFound`` / ``EffectArgsInvalid`` (permanent) come before the handler runs.
    The caller records the outcome; nothing here touches the run's status.
    """
    definition = engine.deps.registry.effects.get(run.name)
    if definition is None:
        raise EffectNotFound(run.name)
    args = decode_args(definition, run.args)
    state = await engine.thread_state(run.thread_id)
    state.context[EFFECT_ID_KEY] = run.id
    state.context[SCHEDULED_EFFECT_KEY] = {"id": run.id, "name": run.name}
    if _takes_args(definition):
        await call_maybe_async(definition.fn, state, args)
    else:
        await call_maybe_async(definition.fn, state)


def _takes_args(definition: EffectDefinition) -> bool:
    """``handler(state, args)``, or ``handler(state)`` for effects that need no arguments."""
    try:
        params = inspect.signature(definition.fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) != 1 or positional[0].kind == inspect.Parameter.VAR_POSITIONAL
