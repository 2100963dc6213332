"""Where a session stands, stored so another worker can resume it.

``SessionProgress`` is written with every commit that ends or opens a step (it
is the ``progress`` JSON column of a session row); ``ThreadExecutionState`` is
the small amount of execution state a thread keeps between sessions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from runtime.core.messages import Side

StopReason = Literal[
    "stop_on_response",
    "stop_tool",
    "max_side_steps",
    "max_side_turns",  # ai_human: side A took its maxTurns turns in the conversation
    "max_total_steps",
    "max_session_turns",
    "session_stop",
    "session_fail",
    "repeated_tool_error",
    "aborted_by_user",
    "step_error",
    "hook_blocked",
    "state_stop_session",
    "awaiting_human",
    "both_sides_stopped",
    "awaiting_tool",  # parked: a tool call waits for approval or the client (not finished)
    "handler_idle",  # spec 0.2.0: two handler sides and nothing for either to answer
]
STOP_REASONS: tuple[str, ...] = StopReason.__args__  # type: ignore[attr-defined]
# Why a turn ended: a stop reason, "every_step" for a dual_ai side with no turn condition
# (no stopOnResponse, no stopTool), whose turn is one step long, or "handler_turn" for a
# handler side that answered what it received.
TurnReason = StopReason | Literal["every_step", "handler_turn"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=False)


class TurnOutcome(_Model):
    """Why one side's turn ended (and the stop tool's response value, when it did)."""

    side: Side
    reason: TurnReason
    step: int
    value: Any = None


class OpenStep(_Model):
    """A step whose LLM request was opened but whose end was not committed yet.

    ``message_id`` is the step's assistant message (pending until the response
    is stored); ``log_id`` the LLM log of the attempt in flight.
    """

    message_id: str
    log_id: str
    side: Side
    prompt: str


class SessionProgress(_Model):
    """The durable progress of one session (one autonomous run of the loop).

    Counters are per session: ``steps`` (LLM request/response cycles, all
    sides), ``side_steps`` (per side), ``turns`` (completed turns, for
    ``maxSessionTurns``); ``turn_steps`` counts the steps of the turn in
    progress (for ``maxSteps`` and its budget warning). ``started_at`` and ``turn_started_at`` are
    the ``created_at`` (µs) boundaries of the session and of the current turn:
    history assembly uses them for ``includeChat``/``includePastTools``.
    """

    session_id: str
    agent: str
    root_message_id: str | None = None
    started_at: int = 0
    side: Side = "a"
    turn_started_at: int = 0
    steps: int = 0
    side_steps: dict[str, int] = Field(default_factory=lambda: {"a": 0, "b": 0})
    turn_steps: int = 0
    turns: int = 0
    side_turns: dict[str, int] = Field(default_factory=lambda: {"a": 0, "b": 0})
    # Spec 0.2.0: turns a person's messages took in this session, by side (exchanges).
    human_turns: dict[str, int] = Field(default_factory=dict)
    open_step: OpenStep | None = None
    turn_outcomes: list[TurnOutcome] = Field(default_factory=list)
    finished: bool = False
    stop_reason: StopReason | None = None
    stopped_by: Side | None = None
    stop_detail: str | None = None
    outcome: Any = None
    # ``state.execution.stop_session(notify_parent=False, status=…)``: a child whose session
    # ends so delivers nothing to its parent, and/or shows ``final_status`` in the registry.
    notify_parent: bool = True
    final_status: str | None = None

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict for the store."""
        return self.model_dump(mode="json")

    def snapshot(self) -> SessionProgress:
        """A copy that later steps cannot change (the session mutates its progress in
        place; a staged write must store the progress as it was when staged). Cheaper than
        a deep copy: only the containers are mutated, their items are replaced."""
        return self.model_copy(
            update={
                "side_steps": dict(self.side_steps),
                "side_turns": dict(self.side_turns),
                "human_turns": dict(self.human_turns),
                "turn_outcomes": list(self.turn_outcomes),
            }
        )


class ThreadExecutionState(_Model):
    """Execution state a thread keeps between sessions (``Thread.execution_state``).

    ``turns`` counts completed turns per side over the thread's lifetime;
    ``last_session_id``/``last_stop_reason`` describe the most recent session.
    """

    turns: dict[str, int] = Field(default_factory=lambda: {"a": 0, "b": 0})
    # Spec 0.2.0 ``maxSessionTurns``: each side's turns since the exchange count started
    # (kept across sessions; a session ending by a session tool, a stop or the cap resets it).
    exchanges: dict[str, int] = Field(default_factory=dict)
    # Spec 0.2.0 handler sides: by side, the ``created_at`` (µs) of the last message handed to
    # its handler. Advanced and committed before each call, so no message is handed twice.
    handler_watermarks: dict[str, int] = Field(default_factory=dict)
    last_session_id: str | None = None
    last_stop_reason: StopReason | None = None
    last_stopped_by: Side | None = None

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict for the store."""
        return self.model_dump(mode="json")
