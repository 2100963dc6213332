"""A handler-backed side's turn (spec 0.2.0 ``defineHandler``; reference §4.5).

No model and no tools: every top-level message the side receives (side A receives ``user``
messages, side B ``assistant`` ones) that is newer than the side's watermark is handed to the
handler's ``execute(state, message)``, one at a time, oldest first. The watermark is
committed *before* each call, so a session that dies during a call never calls again for
that message (at most once). Each call gets a ``handler_execution`` log; a handler that
raises marks its log ``handler_execution_error`` and the next message is handed on, the
session goes on. A text the handler returns is stored as the side's message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from runtime.core.messages import Message, Side, new_id, role_for_side
from runtime.store.protocol import CommitResult, LogRecord, ThreadUpdate
from runtime.store.recorder import Batch
from runtime.tools.registry import call_maybe_async

if TYPE_CHECKING:
    from runtime.core.transcript import Transcript
    from runtime.deps import Deps
    from runtime.state import ExecutionControl, ThreadState
    from runtime.store.protocol import ThreadRecord
    from runtime.store.recorder import Recorder
    from runtime.tools.handlers import HandlerDefinition
    from runtime.tools.hooks import HookRunner

logger = logging.getLogger("runtime.loop.handler_turn")
HANDLER_ERROR = "handler_execution_error"


@dataclass(frozen=True)
class Delivered:
    """What a handler turn did: how many messages it handed over, and whether a person's
    Stop arrived meanwhile (the session then ends as ``aborted_by_user``)."""

    count: int
    aborted: bool = False


def inbound_role(side: Side) -> str:
    """The role a side receives: side A answers ``user`` messages, side B ``assistant`` ones."""
    return "user" if side == "a" else "assistant"


def inbound(transcript: Transcript, side: Side, watermark: int) -> list[Message]:
    """The completed top-level messages ``side`` has not been handed yet, oldest first."""
    role = inbound_role(side)
    rows = [
        m
        for m in transcript.messages
        if m.role == role
        and m.parent_id is None
        and m.status in (None, "completed")
        and m.created_at > watermark
    ]
    return sorted(rows, key=lambda m: m.created_at)


class HandlerTurn:
    """One turn of ``side``, backed by ``handler``."""

    def __init__(
        self,
        deps: Deps,
        thread: ThreadRecord,
        transcript: Transcript,
        recorder: Recorder,
        control: ExecutionControl,
        state: ThreadState,
        hooks: HookRunner,
    ) -> None:
        self.deps, self.thread, self.transcript = deps, thread, transcript
        self.recorder, self.control, self.state, self.hooks = recorder, control, state, hooks

    async def run(self, side: Side, handler: HandlerDefinition) -> Delivered:
        """Hand each new inbound message to ``handler``, stopping early when it (or anyone)
        ends the session."""
        marks = self.thread.execution_state.handler_watermarks
        pending = inbound(self.transcript, side, marks.get(side, 0))
        for count, message in enumerate(pending, start=1):
            marks[side] = message.created_at
            log = LogRecord(
                id=new_id(),
                thread_id=self.thread.id,
                kind="handler_execution",
                message_id=message.id,
                provider="system",
                model=handler.name,
                created_at=self.deps.clock.now(),
            )
            # The at-most-once point: the watermark is stored before the call is made.
            state = self.thread.execution_state.model_copy(deep=True)
            opened = Batch(logs=[log], thread=ThreadUpdate(execution_state=state))
            if (await self.recorder.commit(opened)).stopped:
                return Delivered(count - 1, aborted=True)
            if (await self._deliver(side, handler, message, log)).stopped:
                return Delivered(count, aborted=True)
            if self.control.stop_requested is not None or self.control.stopped:
                return Delivered(count)
        return Delivered(len(pending))

    async def _deliver(
        self, side: Side, handler: HandlerDefinition, message: Message, log: LogRecord
    ) -> CommitResult:
        started = log.created_at
        created: list[Message] = []
        try:
            # A copy: what the handler does to it must not change the session's transcript.
            given = message.copy(metadata=dict(message.metadata))
            reply = await call_maybe_async(handler.execute, self.state, given)
            if reply is not None and not isinstance(reply, str):
                raise TypeError(
                    f"handler {handler.name!r} returned {type(reply).__name__}; return text "
                    "(the side's message) or None"
                )
            if reply:
                created.append(await self._said(side, handler.name, reply))
            done = replace(log, is_complete=True)
        except Exception as exc:  # a handler's failure ends its delivery, never the session
            # The exception's text may quote a secret: only its type goes to the server log,
            # the text to the (redacted) log row.
            logger.warning("Handler %s failed with %s", handler.name, type(exc).__name__)
            error = str(exc) or type(exc).__name__
            done = replace(log, is_complete=True, error=error, error_type=HANDLER_ERROR)
        done.latency_ms = max(0, (self.deps.clock.now() - started) // 1000)
        closed = Batch(created=created, logs=[done])
        return await self.recorder.commit(closed, self.hooks, self.state)

    async def _said(self, side: Side, handler: str, text: str) -> Message:
        message = Message(
            id=new_id(),
            role=role_for_side(side),
            content=text,
            created_at=self.deps.clock.now(),
            side=side,
            metadata={"handler": handler},
        )
        return await self.hooks.before_create_message(self.state, message)
