"""The write path: one store commit, then the in-memory transcript, ``after_*`` hooks and frames.

Everything the engine writes while running goes through ``Recorder.commit``,
so the order is always the same: the store first (the write is durable), then
listeners (frames describe stored facts only).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.events import EventSink, log_data, message_data
from runtime.messages import Clock, Message
from runtime.progress import SessionProgress
from runtime.redaction import Redactor, current_redactor, install_log_filter
from runtime.store import Commit, CommitResult, LogRecord, Store, ThreadUpdate
from runtime.transcript import Transcript

if TYPE_CHECKING:
    from runtime.hooks import HookRunner


COMMIT_FAILED = "_engine_commit_failed"
install_log_filter(logging.getLogger("runtime"))


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
        # Every secret the thread can resolve; loaded once, before the first write.
        self.redactor = Redactor()
        self._secrets_loaded = False
        self._loading: asyncio.Task[Redactor] | None = None
        self._pending: list[dict[str, Any]] = []

    async def ready(self) -> Redactor:
        """The thread's redactor, loading its secrets from the store on first use."""
        if not self._secrets_loaded:
            load = getattr(self.store, "secret_values", None)
            pairs = await load(self.thread_id) if load is not None else []
            self.redactor.add(pairs)
            self._secrets_loaded = True
            current_redactor.set(self.redactor)
            pending, self._pending = self._pending, []
            for frame in pending:
                self.sink.emit(self.thread_id, self.redactor.data(frame))
        return self.redactor

    def redact_message(self, message: Message) -> Message:
        """Redact ``message`` in place (every holder of it sees the redacted text) and return it."""
        if self.redactor:
            for f in dataclasses.fields(message):
                value = getattr(message, f.name)
                if isinstance(value, str | list | dict):
                    setattr(message, f.name, self.redactor.data(value))
        return message

    def redact_log(self, log: LogRecord) -> LogRecord:
        """A redacted copy of ``log`` (its request body may still be in flight to the provider)."""
        if not self.redactor:
            return log
        r = self.redactor
        return dataclasses.replace(
            log,
            request_body=r.data(log.request_body),
            response_body=r.data(log.response_body),
            system_prompt=r.text(log.system_prompt),
            error=r.text(log.error),
        )

    async def commit(
        self, batch: Batch, hooks: HookRunner | None = None, state: Any = None
    ) -> CommitResult:
        """Store ``batch`` atomically, then update the transcript, run hooks, emit frames.

        Secrets are redacted first: stored rows, the transcript the model sees
        next and every frame carry ``[REDACTED:NAME]`` instead of the value.
        """
        await self.ready()
        commit = Commit(
            messages=[self.redact_message(m) for m in batch.created + batch.updated],
            logs=[self.redact_log(log) for log in batch.logs],
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
        await self._redact_drained(result.drained)
        self._remember(commit.messages + result.drained)
        await self._after_hooks(batch, hooks, state)
        self._emit(commit.messages + result.drained, commit.logs)
        return result

    async def _redact_drained(self, drained: list[Message]) -> None:
        """Queued rows were written by the host (the API), not through ``commit``: redact them
        in place for the transcript and frames, and store the redacted text over the raw one."""
        if not self.redactor or not drained:
            return
        changed = []
        for message in drained:
            before = dataclasses.replace(message)
            if self.redact_message(message) != before:
                changed.append(message)
        if changed:
            await self.store.commit(self.thread_id, Commit(messages=changed))

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
            self.emit(log_data(log))
        for message in messages:
            self.emit(message_data(message))

    def emit(self, frame: dict[str, Any]) -> None:
        """Send a frame (redacted) to the thread's listeners.

        Before the thread's secrets are loaded, frames wait (in order) for the
        load, which is started here when an event loop is running.
        """
        if self._secrets_loaded:
            self.sink.emit(self.thread_id, self.redactor.data(frame))
            return
        self._pending.append(frame)
        if self._loading is None or self._loading.done():
            try:
                self._loading = asyncio.get_running_loop().create_task(self.ready())
            except RuntimeError:  # no loop: nothing can load the secrets; send what we know
                pending, self._pending = self._pending, []
                for item in pending:
                    self.sink.emit(self.thread_id, self.redactor.data(item))
