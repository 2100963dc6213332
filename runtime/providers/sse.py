"""Server-sent events: an incremental parser for the bytes a vendor streams back.

Follows the WHATWG event-stream rules the vendors rely on: lines end with CRLF,
LF or CR (Gemini sends CRLF, the others LF); ``:`` starts a comment (OpenRouter's
``: OPENROUTER PROCESSING`` keep-alives); several ``data:`` lines join with a
newline; a blank line dispatches the event. A trailing event without its blank
line is dropped, as the standard says: a stream cut mid-event must not produce
a half-parsed payload.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass


@dataclass(slots=True)
class SSEEvent:
    """One dispatched event: its ``event`` name (``message`` when unnamed) and ``data``."""

    event: str
    data: str
    id: str | None = None


class SSEDecoder:
    """Turns byte chunks into events; keeps partial lines between chunks."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse one chunk; returns the events it completed (possibly none)."""
        self._buffer += self._utf8.decode(chunk)
        return self._drain(final=False)

    def close(self) -> list[SSEEvent]:
        """End of the byte stream: finish the last line (an unterminated event is dropped)."""
        self._buffer += self._utf8.decode(b"", final=True)
        return self._drain(final=True)

    def _drain(self, final: bool) -> list[SSEEvent]:
        if "\r" not in self._buffer:
            return self._drain_lf(final)
        events: list[SSEEvent] = []
        buffer = self._buffer
        start = 0
        length = len(buffer)
        while start < length:
            cut = _line_end(buffer, start)
            if cut is None:
                break
            end, after = cut
            # A CR at the very end may be the first half of a CRLF split across chunks.
            if after == length and buffer[end] == "\r" and not final:
                break
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = after
        self._buffer = buffer[start:]
        if final and self._buffer:
            event = self._line(self._buffer)
            self._buffer = ""
            if event is not None:
                events.append(event)
        return events

    def _drain_lf(self, final: bool) -> list[SSEEvent]:
        """The common case (LF-only streams): one ``split`` instead of a scan per line."""
        lines = self._buffer.split("\n")
        rest = lines.pop()  # after the last LF: a partial line (or nothing)
        self._buffer = "" if final else rest
        if final and rest:
            lines.append(rest)
        events: list[SSEEvent] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None  # comment / keep-alive
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            self._id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event, self._data = "", []
        return event


def _line_end(buffer: str, start: int) -> tuple[int, int] | None:
    """(end of line, start of next line) for the first line break at or after ``start``."""
    lf = buffer.find("\n", start)
    cr = buffer.find("\r", start, lf if lf >= 0 else len(buffer))
    if cr >= 0:
        if cr + 1 < len(buffer) and buffer[cr + 1] == "\n":
            return cr, cr + 2
        return cr, cr + 1
    if lf >= 0:
        return lf, lf + 1
    return None


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Events from an async byte stream (e.g. ``httpx.Response.aiter_bytes()``)."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
