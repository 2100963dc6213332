"""The top-level conversation of a thread, kept in memory for the length of a session.

Loaded once when a session starts; every write the session makes (and every
drained queue row) is applied to it, so building a request costs no read.
"""

from __future__ import annotations

import bisect

from runtime.core.messages import Message


class Transcript:
    """Depth-0 messages in ``created_at`` order, addressable by id and by tool call id."""

    def __init__(self, messages: list[Message] | None = None) -> None:
        self.messages: list[Message] = []
        self._by_id: dict[str, Message] = {}
        # Tool messages by the call they answer: a step looks up the results of its calls,
        # which are usually not stored yet, so a scan would walk the whole history.
        self._results: dict[str, list[Message]] = {}
        # Per change, the lowest index it touched: a request re-selects its rows only from
        # the first one changed since the last request (``changed_since``, issue #39).
        self._touched: list[int] = []
        for message in sorted(messages or [], key=lambda m: m.created_at):
            self.upsert(message)

    @property
    def revision(self) -> int:
        """How many changes this transcript has had."""
        return len(self._touched)

    def changed_since(self, revision: int) -> int:
        """The lowest index a change after ``revision`` touched (``len(messages)`` if none)."""
        later = self._touched[revision:]
        return min(later) if later else len(self.messages)

    def _index(self, message: Message) -> int:
        # From the end: the row a session replaces is nearly always its newest.
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index] is message:
                return index
        raise ValueError(message.id)

    def upsert(self, message: Message) -> None:
        """Add or replace a message (sub-prompt messages, depth > 0, are ignored)."""
        if message.depth != 0:
            return
        old = self._by_id.get(message.id)
        touched = len(self.messages)
        if old is not None:
            touched = self._index(old)
            del self.messages[touched]
            self._forget_result(old)
        self._by_id[message.id] = message
        if message.role == "tool" and message.tool_call_id:
            self._results.setdefault(message.tool_call_id, []).append(message)
        if not self.messages or self.messages[-1].created_at < message.created_at:
            self.messages.append(message)
            touched = min(touched, len(self.messages) - 1)
        else:
            keys = [m.created_at for m in self.messages]
            at = bisect.bisect(keys, message.created_at)
            self.messages.insert(at, message)
            touched = min(touched, at)
        self._touched.append(touched)

    def remove(self, message_id: str) -> None:
        """Forget a deleted message."""
        old = self._by_id.pop(message_id, None)
        if old is not None:
            index = self._index(old)
            del self.messages[index]
            self._touched.append(index)
            self._forget_result(old)

    def _forget_result(self, old: Message) -> None:
        answers = self._results.get(old.tool_call_id or "")
        if answers:
            answers[:] = [a for a in answers if a is not old]

    def get(self, message_id: str) -> Message | None:
        """A message by id."""
        return self._by_id.get(message_id)

    def result_for(self, call_id: str) -> Message | None:
        """The stored tool message answering ``call_id`` (newest first)."""
        answers = self._results.get(call_id)
        if not answers:
            return None
        return max(answers, key=self.messages.index) if len(answers) > 1 else answers[0]

    def tool_rows(self) -> list[Message]:
        """Completed tool messages, oldest first."""
        return [m for m in self.messages if m.role == "tool" and m.status != "pending"]

    def recent_tool_rows(self, count: int, skip: set[str]) -> list[Message]:
        """The newest ``count`` completed tool messages not in ``skip``, oldest first: read
        from the end, so a step's stop checks do not walk the whole history."""
        found: list[Message] = []
        for message in reversed(self.messages):
            if len(found) == count:
                break
            if message.role == "tool" and message.status != "pending" and message.id not in skip:
                found.append(message)
        return found[::-1]

    @property
    def last_created_at(self) -> int:
        """``created_at`` of the newest message (0 when empty)."""
        return self.messages[-1].created_at if self.messages else 0
