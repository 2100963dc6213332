"""The write path: one store commit, then the in-memory transcript, ``after_*`` hooks and frames.

Everything the engine writes while running goes through ``Recorder.commit``,
so the order is always the same: the store first (the write is durable), then
listeners (frames describe stored facts only).

``Recorder.stage`` keeps a batch to go out with the next commit instead of
committing it now. The engine stages the opening of a step (the pending
message and the request's incomplete log): nothing outside the process acts
between opening a step and getting its response, so storing the opening on its
own bought an awaited round trip per step and no safety (a session that dies
before the response is stored redoes the step either way). The opening is still
written on its own when somebody could see it: when the model streams its first
delta, or when it has not answered within ``STAGE_DELAY`` seconds. That write
runs in the background while the model works, and frames emitted meanwhile
wait for it, so listeners still see the pending message before its chunks.
When the response comes first, the opening rides with its commit and its
``pending`` frame is sent right before the completed one (``_superseded``):
listeners see every step's row pending before it completes, at no extra commit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from runtime.core.messages import Clock, Message
from runtime.core.progress import SessionProgress
from runtime.core.redaction import Redactor, current_redactor, install_log_filter
from runtime.core.transcript import Transcript
from runtime.store.error_origin import with_origin
from runtime.store.events import EventSink, log_data, message_data
from runtime.store.protocol import (
    COMMIT_FAILED,
    Commit,
    CommitResult,
    LogRecord,
    Store,
    ThreadUpdate,
)
from runtime.store.storable import SeenPrefix, make_storable_in_place, storable, storable_request


class AfterWriteHooks(Protocol):
    """The ``after_*`` hooks a commit runs (``runtime.tools.hooks.HookRunner``, which builds on the
    store's layer and not the other way round)."""

    async def after_create_message(self, state: Any, message: Message) -> None: ...

    async def after_update_message(self, state: Any, message: Message) -> None: ...


# How long a staged opening may wait for the response before it is stored on its own.
# Models that answer sooner (scripted ones, short non-streamed tool calls) share one
# commit with their response; a slower model's opening is stored while it thinks.
STAGE_DELAY = 0.05
# Frames that show a pending message: they must not reach listeners before the message.
_STREAM_FRAMES = frozenset(
    {"message_chunk", "reasoning_chunk", "message_image", "provider_tool_done", "web_search_done"}
)
install_log_filter(logging.getLogger("runtime"))


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


@dataclass(slots=True)
class _Part:
    """One batch of a commit, with the hooks that observe it."""

    batch: Batch
    hooks: AfterWriteHooks | None = None
    state: Any = None


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
        # Staged writes (``stage``), the frames held back until they are stored, and the
        # background write of the staged batch when it cannot wait for the next commit.
        self._staged: list[_Part] = []
        self._held: list[dict[str, Any]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._flush: asyncio.Task[None] | None = None
        self._flush_error: BaseException | None = None
        self._requests = SeenPrefix()  # the last request body's messages found storable

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
        self, batch: Batch, hooks: AfterWriteHooks | None = None, state: Any = None
    ) -> CommitResult:
        """Store ``batch`` (and whatever is staged) atomically, then update the transcript, run
        hooks, emit frames.

        Secrets are redacted first: stored rows, the transcript the model sees
        next and every frame carry ``[REDACTED:NAME]`` instead of the value.
        """
        await self.ready()
        await self._settle()
        return await self._store([*self._take_staged(), _Part(batch, hooks, state)])

    def stage(self, batch: Batch, hooks: AfterWriteHooks | None = None, state: Any = None) -> None:
        """Keep ``batch`` to be stored with the next commit (see the module docstring).

        It is stored on its own, in the background, when a streamed delta is
        emitted or after ``STAGE_DELAY`` seconds, whichever comes first.
        """
        if batch.progress is not None:
            batch.progress = batch.progress.snapshot()
        self._staged.append(_Part(batch, hooks, state))
        if self._timer is None and self._flush is None:
            self._timer = asyncio.get_running_loop().call_later(STAGE_DELAY, self._start_flush)

    def discard_staged(self) -> None:
        """Forget staged writes and cancel their background write (the session is over: a
        late write of an opening could land on top of the rows of a resumed session)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._staged.clear()
        held, self._held = self._held, []
        if self._flush is None:
            for frame in held:
                self._send(frame)

    async def _settle(self) -> None:
        """Before a commit: cancel the pending background write (the staged batch goes out
        with this commit instead), or wait for the one in flight; its failure is ours."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flush is not None:
            await asyncio.shield(self._flush)
        if self._flush_error is not None:
            error, self._flush_error = self._flush_error, None
            raise error

    def _take_staged(self) -> list[_Part]:
        staged, self._staged = self._staged, []
        return staged

    def _start_flush(self) -> None:
        self._timer = None
        if self._flush is None and self._staged:
            self._flush = asyncio.get_running_loop().create_task(self._flush_staged())

    async def _flush_staged(self) -> None:
        parts = self._take_staged()
        try:
            commit, result = await self._write(parts)
        except Exception as exc:  # re-raised by the next commit: the session must die
            self._flush_error = exc
            self._held.clear()
            return
        finally:
            self._flush = None
        # Frames first, with no await before them: a delta emitted from now on is sent at
        # once, so the pending message and the held frames must already be out.
        self._emit_stored(Batch(), commit, result.drained, parts)
        for part in parts:
            await self._after_hooks(part.batch, part.hooks, part.state)

    async def _store(self, parts: list[_Part]) -> CommitResult:
        """Commit ``parts`` as one; the last part is the caller's, the others were staged."""
        commit, result = await self._write(parts)
        for part in parts:
            await self._after_hooks(part.batch, part.hooks, part.state)
        self._emit_stored(parts[-1].batch, commit, result.drained, parts[:-1])
        return result

    async def _write(self, parts: list[_Part]) -> tuple[Commit, CommitResult]:
        """Store ``parts`` in one commit (one row per id, the newest version) and update the
        transcript."""
        # Made storable in place too, so the transcript the model sees next, the frames and
        # the stored rows agree (runtime/store/storable.py).
        messages = _newest(
            {
                m.id: make_storable_in_place(self.redact_message(m))
                for p in parts
                for m in _rows(p.batch)
            }
        )
        # Only the newest version of a log is stored or shown: a step's opening log and its
        # completed version share a request body holding the whole history, checked once,
        # and only in its messages that the previous request did not already hold.
        newest_logs = _newest({x.id: x for p in parts for x in p.batch.logs})
        logs = [self._storable_log(self.redact_log(with_origin(x))) for x in newest_logs]
        merged = Batch()
        for part in parts:
            merged = merged.merge(part.batch)
        # A failed step's detail may quote a vendor's error, which may quote the refused key:
        # the session row keeps it redacted like every stored text.
        progress = merged.progress
        if progress is not None and progress.stop_detail and self.redactor:
            progress.stop_detail = self.redactor.text(progress.stop_detail)
        commit = Commit(
            messages=messages,
            logs=logs,
            progress=storable(merged.progress),
            thread=storable(merged.thread),
            drain_queue=merged.drain,
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
        return commit, result

    def _storable_log(self, log: LogRecord) -> LogRecord:
        body = log.request_body
        if body is None:
            return storable(log)
        bare = dataclasses.replace(log, request_body=None)
        clean, clean_body = storable(bare), storable_request(body, self._requests)
        if clean is bare and clean_body is body:
            return log
        clean.request_body = clean_body
        return clean

    def _emit_stored(
        self, mine: Batch, commit: Commit, drained: list[Message], staged: list[_Part]
    ) -> None:
        """Frames of what ``commit`` stored, in the order things happened: rows that only
        staged parts wrote, then the frames held while they were staged, then the rest
        (``mine``: the caller's batch). Held frames stay held while something staged is
        still unstored (a concurrent sub-prompt's opening, or its background write).

        A staged row that a later part of the same commit replaced (a step's pending
        message and its response) is shown as staged first: every row is broadcast
        ``pending`` before it completes (docs/api.md "Order of one turn"), even when the
        model answered before the opening had to be stored on its own. That frame shows
        a version the commit superseded; its stored version is the very next frame for
        that row, sent with no await in between.
        """
        own_ids = {m.id for m in _rows(mine)} | {x.id for x in mine.logs}
        early_logs = [x for x in commit.logs if x.id not in own_ids]
        early = [m for m in commit.messages if m.id not in own_ids]
        self._emit(_superseded(staged, commit) + early, early_logs)
        if not self._staged and self._flush is None:
            held, self._held = self._held, []
            for frame in held:
                self._send(frame)
        late_logs = [x for x in commit.logs if x.id in own_ids]
        self._emit([m for m in commit.messages if m.id in own_ids] + drained, late_logs)

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

    async def _after_hooks(self, batch: Batch, hooks: AfterWriteHooks | None, state: Any) -> None:
        if hooks is None:
            return
        for message in batch.created:
            await hooks.after_create_message(state, message)
        for message in batch.updated:
            await hooks.after_update_message(state, message)

    def _emit(self, messages: list[Message], logs: list[LogRecord]) -> None:
        # Stored facts go out at once: they are what held frames were waiting for.
        for log in logs:
            self._send(log_data(log))
        for message in messages:
            self._send(message_data(message))

    def emit(self, frame: dict[str, Any]) -> None:
        """Send a frame (redacted) to the thread's listeners.

        Before the thread's secrets are loaded, frames wait (in order) for the
        load, which is started here when an event loop is running.
        """
        if self._secrets_loaded:
            if self._staged or self._flush is not None:
                # Something this frame follows is not stored yet: hold it until it is.
                self._held.append(frame)
                if frame.get("type") in _STREAM_FRAMES and self._flush is None:
                    if self._timer is not None:
                        self._timer.cancel()
                    self._start_flush()
                return
            self._send(frame)
            return
        self._pending.append(frame)
        if self._loading is None or self._loading.done():
            try:
                self._loading = asyncio.get_running_loop().create_task(self.ready())
            except RuntimeError:  # no loop: nothing can load the secrets; send what we know
                pending, self._pending = self._pending, []
                for item in pending:
                    self._send(item)

    def _send(self, frame: dict[str, Any]) -> None:
        self.sink.emit(self.thread_id, self.redactor.data(frame))


def _rows(batch: Batch) -> list[Message]:
    return batch.created + batch.updated


def _superseded(staged: list[_Part], commit: Commit) -> list[Message]:
    """The first staged version of each pending row that ``commit`` stored in a newer
    version (``_newest`` keeps the last object written for an id)."""
    stored = {m.id: m for m in commit.messages}
    shown: dict[str, Message] = {}
    for part in staged:
        for m in _rows(part.batch):
            newer = stored.get(m.id)
            if m.status == "pending" and newer is not None and newer is not m:
                shown.setdefault(m.id, m)
    return list(shown.values())


def _newest(by_id: dict[str, Any]) -> list[Any]:
    """One row per id, the last version written (a dict keeps the first position of a key
    and the last value): one statement cannot upsert the same row twice."""
    return list(by_id.values())
