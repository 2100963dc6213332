"""The write path: one store commit, then the in-memory transcript, ``after_*`` hooks and frames.

Everything the engine writes while running goes through ``Recorder.commit``,
so the order is always the same: the store first (the write is durable), then
listeners (frames describe stored facts only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.events import EventSink, log_data, message_data
from runtime.messages import Clock, Message
from runtime.progress import SessionProgress
from runtime.store import Commit, CommitResult, LogRecord, Store, ThreadUpdate
from runtime.transcript import Transcript

if TYPE_CHECKING:
    from runtime.hooks import HookRunner


COMMIT_FAILED = "_engine_commit_failed"


def is_commit_failure(exc: BaseException) -> bool:
    """Whether ``exc`` came out of a failed commit: the session must die (and be resumed), so
    no tool or hook may swallow it as an ordinary error."""
    return bool(getattr(exc, COMMIT_FAILED, False))


@dataclass(slots=True)
class Batch:
    """What one commit writes; ``created`` and ``updated`` decide which ``after_*`` hook runs."""

    created: list[Message] = field(default_factory=list)
    updated: list[Message] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    progress: SessionProgress | None = None
    thread: ThreadUpdate | None = None
    drain: bool = False

    def merge(self, other: Batch) -> Batch:
        """This batch plus ``other`` (``other``'s progress/thread/drain win when set)."""
        return Batch(
            created=self.created + other.created,
            updated=self.updated + other.updated,
            logs=self.logs + other.logs,
            progress=other.progress or self.progress,
            thread=other.thread or self.thread,
            drain=self.drain or other.drain,
        )


class Recorder:
    """Commits batches for one thread and tells the world about them."""

    def __init__(
        self,
        store: Store,
        sink: EventSink,
        clock: Clock,
        thread_id: str,
        transcript: Transcript | None = None,
    ) -> None:
        self.store, self.sink, self.clock = store, sink, clock
        self.thread_id = thread_id
        self.transcript = transcript
        self.commits = 0

    async def commit(
        self, batch: Batch, hooks: HookRunner | None = None, state: Any = None
    ) -> CommitResult:
        """Store ``batch`` atomically, then update the transcript, run hooks, emit frames."""
        commit = Commit(
            messages=batch.created + batch.updated,
            logs=batch.logs,
            progress=batch.progress,
            thread=batch.thread,
            drain_queue=batch.drain,
        )
        try:
            result = await self.store.commit(self.thread_id, commit)
        except Exception as exc:
            setattr(exc, COMMIT_FAILED, True)
            raise
        self.commits += 1
        for message in result.drained:
            self.clock.observe(message.created_at)
        self._remember(commit.messages + result.drained)
        await self._after_hooks(batch, hooks, state)
        self._emit(commit.messages + result.drained, batch.logs)
        return result

    def _remember(self, messages: list[Message]) -> None:
        if self.transcript is None:
            return
        for message in messages:
            self.transcript.upsert(message)

    async def _after_hooks(self, batch: Batch, hooks: HookRunner | None, state: Any) -> None:
        if hooks is None:
            return
        for message in batch.created:
            await hooks.after_create_message(state, message)
        for message in batch.updated:
            await hooks.after_update_message(state, message)

    def _emit(self, messages: list[Message], logs: list[LogRecord]) -> None:
        for log in logs:
            self.sink.emit(self.thread_id, log_data(log))
        for message in messages:
            self.sink.emit(self.thread_id, message_data(message))

    def emit(self, frame: dict[str, Any]) -> None:
        """Send a frame to the thread's listeners."""
        self.sink.emit(self.thread_id, frame)
