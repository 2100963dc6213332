"""A run's AG-UI events (``/ag-ui``) from our frames and stored rows.

The text of a reply streams from the thread's live ``message_chunk`` frames (through the
doors' shared wait, ``door_support.follow``, which fills in from the stored row whatever a
dropped frame missed); everything else comes from the **stored rows**, the truth a dropped
frame cannot take away: a reply's end and its tool calls once the row is final, a tool's
result once its row exists, the thread's values after each ``kv_changed`` and at the end.

Each top-level reply is one AG-UI step (one LLM request, in the spec's words, and the tool
calls it asked for): ``STEP_STARTED``, its text, its calls, their results, and
``STEP_FINISHED`` when the next reply starts or the run ends. Events are always well
nested: text of a reply whose turn has not come yet (the one before it not read final, its
tools' results not in) is held until it has. docs/api.md, "AG-UI",
has the table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents_app.api import ag_ui_wire as wire
from agents_app.api.door_support import db
from agents_app.services.doors.ag_ui_runs import Row, run_rows, state_patch, thread_state
from agents_app.services.doors.openai_compat import TurnState

Write = Callable[[dict[str, Any]], Awaitable[None]]


class RunEvents:
    """The events of one run, written in order through ``write``."""

    def __init__(self, write: Write, thread_id: str, question_id: str) -> None:
        self.write = write
        self.thread_id = thread_id
        self.question_id = question_id
        self.open: str | None = None  # the reply whose text streams now
        self.started: set[str] = set()  # replies whose TEXT_MESSAGE_START went out
        self.held: dict[str, list[str]] = {}  # text of later replies, until their turn
        self.done: set[str] = set()  # rows turned into events
        self.calls: set[str] = set()  # tool calls sent whose result has not come
        self.step = 0
        self.step_open = False
        self.state: dict[str, Any] = {}
        self.state_changed = False

    # --- the hooks of ``door_support.follow`` --------------------------------------------------

    async def start(self) -> None:
        self.state = await db(thread_state)(self.thread_id)
        await self.write(wire.state_snapshot(self.state))

    def observe(self, meta: dict[str, Any]) -> bool:
        """Read the stored rows now: a value changed, or a top-level message was written
        (a tool's result has no text to wait for)."""
        if meta.get("type") == "event" and meta.get("eventType") == "kv_changed":
            self.state_changed = True
            return True
        return meta.get("type") == "message_data" and not meta.get("depth")

    async def delta(self, message_id: str, text: str) -> None:
        if message_id in self.done:
            return
        if self.open == message_id:
            await self._text(message_id, text)
        else:
            self.held.setdefault(message_id, []).append(text)

    async def on_check(self, state: TurnState) -> None:
        final = {r.id for r in state.replies if r.final}
        for row in await db(run_rows)(self.thread_id, self.question_id):
            if row.id in self.done:
                continue
            if row.role == "assistant":
                if row.id not in final:
                    # Streaming: its text goes out as it comes from now on; what follows
                    # it waits for its row to be final.
                    await self._open(row.id)
                    break
                await self._reply(row)
            elif row.tool_call_id in self.calls:
                self.calls.discard(row.tool_call_id)
                await self.write(wire.tool_result(row.id, row.tool_call_id, row.content))
            self.done.add(row.id)
        if self.state_changed:
            await self._state()

    async def finish(self) -> None:
        """Close what is open (a run that failed or ran out of time mid-reply) and send the
        values' last change."""
        for message_id in [*([self.open] if self.open else []), *self.held]:
            if message_id != self.open:
                await self._begin(message_id)
            for text in self.held.pop(message_id, []):
                await self._text(message_id, text)
            if message_id in self.started:
                await self.write(wire.text_end(message_id))
        self.open = None
        await self._end_step()
        await self._state()

    # --- the steps ------------------------------------------------------------------------------

    async def _begin(self, message_id: str) -> None:
        await self._end_step()
        self.step += 1
        self.step_open = True
        self.open = message_id
        await self.write(wire.step_started(self._step_name()))

    async def _end_step(self) -> None:
        if self.step_open:
            self.step_open = False
            self.calls.clear()  # a call whose result never came (waiting, or failed)
            await self.write(wire.step_finished(self._step_name()))

    def _step_name(self) -> str:
        return f"step {self.step}"

    async def _text(self, message_id: str, text: str) -> None:
        if not text:
            return
        if message_id not in self.started:
            self.started.add(message_id)
            await self.write(wire.text_start(message_id))
        await self.write(wire.text_content(message_id, text))

    async def _open(self, message_id: str) -> None:
        if self.open != message_id:
            await self._begin(message_id)
        for text in self.held.pop(message_id, []):
            await self._text(message_id, text)

    async def _reply(self, row: Row) -> None:
        await self._open(row.id)
        if row.id in self.started:
            await self.write(wire.text_end(row.id))
        self.open = None
        for call in row.tool_calls:
            function = call.get("function") or {}
            call_id = str(call["id"])
            await self.write(wire.tool_start(call_id, str(function.get("name") or ""), row.id))
            arguments = function.get("arguments")
            if arguments:
                await self.write(wire.tool_args(call_id, str(arguments)))
            await self.write(wire.tool_end(call_id))
            self.calls.add(call_id)

    async def _state(self) -> None:
        self.state_changed = False
        now = await db(thread_state)(self.thread_id)
        ops = state_patch(self.state, now)
        self.state = now
        if ops:
            await self.write(wire.state_delta(ops))
