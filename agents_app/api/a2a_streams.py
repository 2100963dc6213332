"""Following an A2A task (``/a2a``): the wait of a send, and the events of a stream or a
resubscribe, over the doors' shared wait (``door_support.Frames`` and ``follow``: the thread's
live frames for the text as it streams, its stored rows for the truth).

docs/api.md, "A2A", has the table of which frame becomes which event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from channels.db import database_sync_to_async

from agents_app.api import a2a_wire as wire
from agents_app.api.door_support import ClientGone, Frames, follow
from agents_app.base.overload import overload_reason
from agents_app.models import ThreadSession
from agents_app.orchestration.openai_turns import Turn
from agents_app.services.doors import a2a_tasks as tasks
from agents_app.services.doors.a2a_tasks import A2AError, TaskView
from agents_app.services.doors.openai_compat import Ask, Said
from agents_app.services.env.redaction import thread_redactor

logger = logging.getLogger("agents_app.api.a2a_v1")

Send = Callable[[dict[str, Any]], Awaitable[None]]
db = database_sync_to_async


@dataclass(frozen=True)
class Started:
    """A task to follow: its session, its thread, the user message it answers."""

    task_id: str
    thread_id: str
    question_id: str

    @classmethod
    def of(cls, session: ThreadSession) -> Started:
        return cls(str(session.pk), str(session.thread_id), str(session.root_message_id))


def ask_of(agent: str, thread_id: str | None, message: Said) -> Ask:
    """The OpenAI door's turn: a message to an agent's thread, new or continued."""
    return Ask(
        api="chat",
        model=agent,
        message=message,
        history=[],
        thread_id=thread_id,
        previous=None,
        stream=False,
        include_usage=False,
    )


def internal_error(exc: Exception, scope: dict[str, Any]) -> A2AError:
    """An unexpected failure as JSON-RPC's internal error (logged; never its details)."""
    reason = overload_reason(exc)
    if reason is not None:
        logger.warning("A2A %s refused: %s", scope.get("path"), exc)
        return A2AError(tasks.INTERNAL_ERROR, f"{reason}; retry shortly.")
    logger.exception("Unhandled error in %s %s", scope.get("method"), scope.get("path"))
    return A2AError(tasks.INTERNAL_ERROR, "Internal error")


async def follow_task(
    agent: str,
    started: Started,
    frames: Frames,
    gone: asyncio.Future[None],
    delta: Callable[[str, str], Awaitable[None]] | None,
    heartbeat: Callable[[], Awaitable[None]] | None = None,
) -> bool:
    """Wait for the task's session to end or park; ``False`` when
    ``STUDIO_OPENAI_WAIT_SECONDS`` ran out first. ``ClientGone`` when the client left."""
    # ``follow`` reads a turn's thread and question: the task's.
    ask = ask_of(agent, started.thread_id, Said("user", ""))
    turn = Turn(started.thread_id, started.question_id, agent, 0, ask)
    redactor = await db(thread_redactor)(started.thread_id) if delta is not None else None
    state = await follow(turn, frames, gone, redactor, delta, heartbeat=heartbeat)
    return state is not None


class EventStream:
    """The SSE answer: each event one JSON-RPC response carrying a ``StreamResponse``."""

    def __init__(self, send: Send, request_id: Any, out: Callable[[Any], Any]) -> None:
        self.send = send
        self.request_id = request_id
        self.out = out  # the result in the caller's protocol version

    async def start(self) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),  # nginx: pass each event on at once
                ],
            }
        )

    async def write(self, data: bytes) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def event(self, value: dict[str, Any]) -> None:
        await self.write(wire.sse(wire.result(self.request_id, self.out(value))))

    async def keep_alive(self) -> None:
        await self.write(b": keep-alive\n\n")

    async def error(self, exc: A2AError) -> None:
        await self.write(wire.sse(wire.error(self.request_id, exc), error=True))

    async def end(self) -> None:
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})


async def streamed(
    stream: EventStream,
    started: Started,
    agent: str,
    base: str,
    frames: Frames,
    gone: asyncio.Future[None],
) -> None:
    """The task's events: the task, then its reply text as it streams (the ``answer``
    artifact), its files, and its last status, until it ends or waits for input."""
    await stream.start()
    try:
        view = await db(tasks.task_view)(started.task_id)
        await stream.event({"task": wire.task(view, base)})
        if view.interrupted:
            return
        working = replace(view, state="working") if view.state == "submitted" else view
        await stream.event(wire.status_update(working))
        text = TextRelay(stream, view)
        await follow_task(agent, started, frames, gone, text.delta, stream.keep_alive)
        # Ended, waiting for input, or still working when the wait ran out (a resubscribe
        # follows it on): the last status tells which.
        view = await db(tasks.task_view)(started.task_id)
        await text.close(view)
        for item in view.files:
            artifact = wire.file_artifact(view, item, base)
            await stream.event(wire.artifact_update(view, artifact, append=False, last=True))
        await stream.event(wire.status_update(view))
    except (ClientGone, asyncio.CancelledError):
        raise
    except A2AError as exc:
        await stream.error(exc)
    except Exception as exc:
        # The status went out with the headers: what failed is told as the stream's error.
        await stream.error(internal_error(exc, {"path": f"task {started.task_id}"}))
    finally:
        with contextlib.suppress(Exception):
            await stream.end()


class TextRelay:
    """The reply text as the ``answer`` artifact: the first piece replaces it, the next are
    appended; replies after the first are apart by a blank line (as ``TaskView.answer``).
    At the end, a stream that joined in the middle of a reply (a resubscribe) or lost
    frames gets the whole answer once more, replacing what it has."""

    def __init__(self, stream: EventStream, view: TaskView) -> None:
        self.stream = stream
        self.view = view
        self.last: str | None = None
        self.sent = ""

    async def delta(self, message_id: str, text: str) -> None:
        if self.last is not None and self.last != message_id:
            text = "\n\n" + text
        artifact = wire.answer_artifact(self.view, text)
        first = self.last is None
        self.last = message_id
        self.sent += text
        await self.stream.event(
            wire.artifact_update(self.view, artifact, append=not first, last=False)
        )

    async def close(self, view: TaskView) -> None:
        if self.last is not None and self.sent == view.answer:
            artifact = wire.answer_artifact(view, "")
            await self.stream.event(wire.artifact_update(view, artifact, append=True, last=True))
        elif view.answer:
            artifact = wire.answer_artifact(view, view.answer)
            await self.stream.event(wire.artifact_update(view, artifact, append=False, last=True))
