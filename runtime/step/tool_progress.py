"""A tool's ``progressArgument`` (spec 0.2.0): ``tool_call_started`` while the model streams.

A tool defined with ``progress_argument="name"`` has its ``tool_call_started`` event and hook
fire as soon as the model has streamed that argument completely, carrying its value as
``progress``, while the rest of the call (and of the reply) still streams. ``ProgressWatch``
reads the stream's tool-call events for one attempt and fires once per call; the tool half
then does not fire again for that call. Calls of tools without a progress argument, and calls
whose argument never completed in the stream, fire when they start to run, as before.

"Complete" is read from a partial JSON parse of the arguments so far (pydantic-core's
``from_json(allow_partial=True)``, which drops a string whose closing quote has not arrived):
the argument is complete once a later argument has begun (for a number: once a comma followed
it), once it is a string, a boolean or ``null`` (those cannot grow), or once the arguments are
whole. A number or an object that is
still the last argument may grow, so it waits.

``GenerationMeter`` (spec 0.2.0 ``generation`` event) counts an attempt's streamed output,
text and tool-call argument deltas alike, and reports an ``outputTokens`` estimate every
``GENERATION_EVERY`` characters: the one sign of progress while a long argument streams.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Mapping, MutableSet
from typing import Any

from pydantic_core import from_json

from runtime.core.messages import ToolCall, make_tool_call
from runtime.providers.base import ToolCallDelta, ToolCallDone, ToolCallStart
from runtime.tools.toolset import OfferedTool

Fire = Callable[[ToolCall, Any], Awaitable[None]]

# The reference's throttle: one estimate per 80 streamed characters, four characters a token.
GENERATION_EVERY = 80
CHARS_PER_TOKEN = 4


class GenerationMeter:
    """Counts one attempt's streamed output characters; calls ``report(outputTokens)`` each
    time another ``GENERATION_EVERY`` characters have streamed since the last report.

    Reports are live frames only: nothing here is stored, so a delta costs no write."""

    def __init__(self, report: Callable[[int], None]) -> None:
        self.report = report
        self.chars = 0
        self._reported_at = 0

    def add(self, text: str) -> None:
        """Streamed output (a text delta or a tool call's argument delta)."""
        self.chars += len(text)
        if self.chars - self._reported_at >= GENERATION_EVERY:
            self._reported_at = self.chars
            self.report(math.ceil(self.chars / CHARS_PER_TOKEN))

    def tool_stream(
        self, then: Callable[[object], Awaitable[None]] | None
    ) -> Callable[[object], Awaitable[None]]:
        """A tool-stream listener that counts argument deltas, then passes each event on."""

        async def feed(item: object) -> None:
            if isinstance(item, ToolCallDelta):
                self.add(item.delta)
            if then is not None:
                await then(item)

        return feed


def completed_argument(arguments: str, name: str, *, whole: bool = False) -> tuple[bool, Any]:
    """``(True, value)`` once argument ``name`` is complete in the streamed ``arguments``
    (``whole``: the arguments are all there); ``(False, None)`` while it may still grow."""
    whole = whole or _is_whole(arguments)
    try:
        parsed = from_json(arguments or "", allow_partial=not whole)
    except ValueError:
        return False, None
    if not isinstance(parsed, dict) or name not in parsed:
        return False, None
    value = parsed[name]
    if whole or next(reversed(parsed)) != name:
        return True, value
    if value is None or isinstance(value, str | bool):
        return True, value
    if isinstance(value, int | float) and _NEXT_BEGUN.search(arguments):
        return True, value
    return False, None


# A comma after a number that is the last parsed value, perhaps with the start of the next
# key: the number is over (a partial parse drops a key that has no value yet, so it cannot
# tell). Not for objects and arrays: their own commas look the same.
_NEXT_BEGUN = re.compile(r',\s*("(?:[^"\\]|\\.)*"?\s*:?\s*)?$')


def _is_whole(arguments: str) -> bool:
    """Whether the arguments streamed so far are already one whole JSON object (a vendor
    that sends them in one delta; the last argument of a finished object)."""
    if not arguments.rstrip().endswith("}"):
        return False
    try:
        from_json(arguments)
    except ValueError:
        return False
    return True


def progress_argument(offered: OfferedTool | None) -> str | None:
    """The progress argument of a native tool (``None``: the tool names none)."""
    tool = offered.tool if offered is not None else None
    return tool.progress_argument if tool is not None else None


class ProgressWatch:
    """Watches one attempt's streamed tool calls and fires ``tool_call_started`` for each
    call of a tool with a progress argument as soon as that argument is complete.

    ``announced`` is the step's set of call ids that fired (shared with the tool half)."""

    def __init__(
        self, tools: Mapping[str, OfferedTool], announced: MutableSet[str], fire: Fire
    ) -> None:
        self.tools, self.announced, self.fire = tools, announced, fire
        self._calls: dict[str, tuple[str, list[str]]] = {}

    async def feed(self, item: object) -> None:
        """One stream event (anything but a tool-call event is ignored)."""
        if isinstance(item, ToolCallStart):
            self._calls[item.id] = (item.name, [])  # a retried attempt streams it anew
            return
        if isinstance(item, ToolCallDelta):
            name, pieces = self._calls.setdefault(item.id, ("", []))
            if not self._watching(item.id, name):
                # Joining every delta of every call would be quadratic in its arguments
                # (a file's content in thousands of deltas): only watched calls keep them.
                return
            pieces.append(item.delta)
            await self._check(item.id, name, "".join(pieces), whole=False)
        elif isinstance(item, ToolCallDone):
            self._calls[item.id] = (item.name, [item.arguments])
            await self._check(item.id, item.name, item.arguments, whole=True)

    def _watching(self, call_id: str, name: str) -> bool:
        """Whether a call still waits for its progress argument."""
        return progress_argument(self.tools.get(name)) is not None and call_id not in self.announced

    async def _check(self, call_id: str, name: str, arguments: str, *, whole: bool) -> None:
        argument = progress_argument(self.tools.get(name))
        if argument is None or call_id in self.announced:
            return
        complete, value = completed_argument(arguments, argument, whole=whole)
        if complete:
            self.announced.add(call_id)
            await self.fire(make_tool_call(call_id, name, arguments), value)
