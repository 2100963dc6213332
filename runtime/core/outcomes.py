"""How a session ended, as the engine reports it to its caller."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runtime.core.messages import Side, role_for_side
from runtime.core.progress import SessionProgress, StopReason, TurnOutcome
from runtime.core.transcript import Transcript


@dataclass(slots=True)
class SessionResult:
    """How a session ended: the stop reason, what each turn did, and the final answer."""

    thread_id: str
    session_id: str
    stop_reason: StopReason
    stopped_by: Side | None = None
    detail: str | None = None
    value: Any = None
    steps: int = 0
    turns: int = 0
    turn_outcomes: list[TurnOutcome] = field(default_factory=list)
    final_text: str | None = None
    notify_parent: bool = True
    final_status: str | None = None

    @property
    def answer(self) -> str:
        """The session's answer: the stop tool value, else the final reply text."""
        if self.value is not None:
            return self.value if isinstance(self.value, str) else json.dumps(self.value)
        return self.final_text or ""


def other(side: Side) -> Side:
    """The other side."""
    return "b" if side == "a" else "a"


def result_of(thread_id: str, progress: SessionProgress, final: str | None) -> SessionResult:
    """A ``SessionResult`` from a finished progress."""
    assert progress.stop_reason is not None
    return SessionResult(
        thread_id=thread_id,
        session_id=progress.session_id,
        stop_reason=progress.stop_reason,
        stopped_by=progress.stopped_by,
        detail=progress.stop_detail,
        value=progress.outcome,
        steps=progress.steps,
        turns=progress.turns,
        turn_outcomes=list(progress.turn_outcomes),
        final_text=final,
        notify_parent=progress.notify_parent,
        final_status=progress.final_status,
    )


def final_text(transcript: Transcript, side: Side) -> str | None:
    """The newest completed non-empty top-level reply written by ``side``."""
    role = role_for_side(side)
    for message in reversed(transcript.messages):
        if message.role == role and message.status == "completed" and message.content:
            return message.content
    return None


def repeated_error_text(detail: str | None) -> str:
    return (
        "I stopped because the same tool error happened several times in a row"
        f"{': ' + detail if detail else ''}. Please check what is wrong, then ask me to continue."
    )
