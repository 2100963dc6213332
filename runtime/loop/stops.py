"""Stop conditions: small predicates over what a step did, checked in priority order.

Each predicate returns a ``Stop`` (a reason code, whether it ends the turn or
the whole session, and the stop tool's value) or ``None``. ``evaluate`` returns
the first hit. The order follows the AgentBuilder agents API (end-session tool,
stop tool, max steps, stop on response), after the user's stop and a stop
requested through ``state``, and before the safety limits (repeated identical
tool errors, the global step ceiling). ``maxSessionTurns`` is checked by the
loop when a turn completes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.core.messages import Message, Side, ToolCall, parse_arguments
from runtime.core.progress import StopReason, TurnOutcome
from runtime.core.spec import SideConfig
from runtime.deps import MAX_SESSION_TURNS, MAX_TOTAL_STEPS, REPEATED_TOOL_ERRORS


@dataclass(slots=True)
class Continue:
    """The loop goes on with another step."""


@dataclass(slots=True)
class Finished:
    """The session ends, for ``reason``."""

    reason: StopReason
    detail: str | None = None
    value: Any = None


StepOutcome = Continue | Finished


@dataclass(slots=True)
class Stop:
    """A stop condition that matched: ``scope`` says whether the turn or the session ends."""

    reason: StopReason
    scope: Literal["turn", "session"]
    value: Any = None
    detail: str | None = None


@dataclass(slots=True)
class CallResult:
    """A tool call of the step and how it ended (``ok``, the stored text)."""

    call: ToolCall
    ok: bool
    content: str


@dataclass(slots=True)
class StepFacts:
    """Everything the predicates look at, for the step that just ran."""

    side: Side
    config: SideConfig
    reply: Message
    results: list[CallResult] = field(default_factory=list)
    turn_steps: int = 0
    side_steps: int = 0  # this side's steps in the session (``maxSteps`` counts these)
    total_steps: int = 0
    max_total_steps: int = MAX_TOTAL_STEPS
    user_stopped: bool = False
    state_stop: str | None = None
    recent_tool_rows: list[Message] = field(default_factory=list)
    repeat_limit: int = REPEATED_TOOL_ERRORS

    def called(self, name: str | None) -> list[CallResult]:
        """The results of this step's calls to tool ``name``."""
        return [r for r in self.results if name and r.call["function"]["name"] == name]


def user_stopped(f: StepFacts) -> Stop | None:
    """The user pressed stop (the thread's persistent stop flag)."""
    return Stop("aborted_by_user", "session") if f.user_stopped else None


def state_stop_session(f: StepFacts) -> Stop | None:
    """A tool or hook called ``state.execution.stop()`` / ``state.stop_session()``."""
    if f.state_stop is None:
        return None
    return Stop("state_stop_session", "session", value=f.state_stop or None)


def end_session_tool(f: StepFacts) -> Stop | None:
    """``endSessionTool`` was called and at least one call succeeded: the session ends."""
    calls = f.called(f.config.end_session_tool)
    if not any(r.ok for r in calls):
        return session_tool(f, "session_stop")
    # No message property: the session's result is its last top-level message (reference
    # §4.12), which ``SessionResult.answer`` falls back to when the value is None.
    return Stop("session_stop", "session")


def session_fail_tool(f: StepFacts) -> Stop | None:
    """The side's ``sessionFail`` tool succeeded: the session ends as a failure."""
    return session_tool(f, "session_fail")


def session_tool(f: StepFacts, kind: Literal["session_stop", "session_fail"]) -> Stop | None:
    """A ``sessionStop``/``sessionFail`` call that succeeded ends the session; its value is the
    ``messageProperty`` argument. Without one the value stays None, so the session's result is
    its last top-level message, as the reference's ("from the messageProperty if bound,
    otherwise from the last top-level message"), not the built-in tool's "Done"."""
    binding = getattr(f.config, kind)
    ok = [r for r in f.called(binding.name if binding else None) if r.ok]
    if not ok:
        return None
    return Stop(kind, "session", value=_argument(ok[0], binding.message_property))


def _argument(result: CallResult, name: str | None) -> str | None:
    """The call's ``name`` argument as text, or None when unbound or absent."""
    if not name:
        return None
    try:
        value = parse_arguments(result.call).get(name)
    except ValueError:
        return None
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def stop_tool(f: StepFacts) -> Stop | None:
    """``stopTool`` was called: the side's turn ends with its response property as outcome."""
    calls = f.called(f.config.stop_tool)
    if not calls:
        return None
    return Stop(
        "stop_tool", "turn", value=_property(calls[0], f.config.stop_tool_response_property)
    )


def max_side_steps(f: StepFacts) -> Stop | None:
    """The side used its ``maxSteps`` (its steps in the session: "per-side step counts",
    agents-spec §6.2): it is forced to stop, which ends its turn (§5.4; in ``ai_human`` the
    turn is the session). In ``dual_ai`` a side past its budget stops after each further step,
    and the session ends when both sides are (``both_sides_stopped``) or a session-level
    condition holds (§6.1: ``maxSessionTurns``, an end-session tool, a stop, the ceiling)."""
    limit = f.config.max_steps
    if limit is None or f.side_steps < limit:
        return None
    return Stop("max_side_steps", "turn", detail=f"Side {f.side} reached max steps ({limit})")


def stop_on_response(f: StepFacts) -> Stop | None:
    """``stopOnResponse`` (default on): text or images without tool calls end the turn."""
    if not f.config.stop_on_response or f.reply.tool_calls:
        return None
    answered = (f.reply.content or "").strip() or f.reply.attachments
    return Stop("stop_on_response", "turn") if answered else None


def repeated_tool_error(f: StepFacts) -> Stop | None:
    """The newest tool results are all the same error, ``REPEATED_TOOL_ERRORS`` times in a row."""
    if all(r.ok for r in f.results):
        return None  # only a step that just failed can complete the streak
    rows = f.recent_tool_rows[-f.repeat_limit :]
    if len(rows) < f.repeat_limit or any(r.tool_status != "error" for r in rows):
        return None
    if len({error_signature(r.content or "") for r in rows}) != 1:
        return None
    return Stop("repeated_tool_error", "session", detail=rows[-1].content)


def max_total_steps(f: StepFacts) -> Stop | None:
    """The global step ceiling of the session."""
    if f.total_steps < f.max_total_steps:
        return None
    return Stop("max_total_steps", "session", detail=f"Maximum steps reached ({f.max_total_steps})")


PRIORITY: tuple[Callable[[StepFacts], Stop | None], ...] = (
    user_stopped,
    state_stop_session,
    session_fail_tool,
    end_session_tool,
    stop_tool,
    max_side_steps,
    stop_on_response,
    repeated_tool_error,
    max_total_steps,
)


def evaluate(facts: StepFacts) -> Stop | None:
    """The highest-priority stop condition that matches, or ``None``.

    A called ``endSessionTool`` (or ``sessionStop``/``sessionFail``) whose calls all failed stops nothing and
    disables the turn conditions for that step (the model is expected to retry).
    """
    ending = [facts.config.end_session_tool]
    ending += [b.name for b in (facts.config.session_stop, facts.config.session_fail) if b]
    # Called, yet no stop matched above: every call failed (reference §4.7).
    end_tool_failed = any(facts.called(name) for name in ending)
    for check in PRIORITY:
        if end_tool_failed and check in TURN_CONDITIONS:
            continue
        found = check(facts)
        if found is not None:
            return found
    return None


TURN_CONDITIONS = (stop_tool, stop_on_response)


def has_turn_condition(config: SideConfig) -> bool:
    """Whether the side can end its turn on its own (else every step is a turn)."""
    return config.stop_on_response or config.stop_tool is not None


def out_of_turns(config: SideConfig, side_turns: int) -> bool:
    """The side took its ``maxTurns`` turns in the session ("Maximum turns this side can take
    before stopping", AgentBuilder agents API): its participation has ended."""
    return config.max_turns is not None and side_turns >= config.max_turns


def both_sides_stopped(outcomes: Sequence[TurnOutcome], spent: Sequence[Side] = ()) -> bool:
    """dual_ai: each side is stopped: its latest turn ended by being forced to stop
    (``maxSteps``), or it took its ``maxTurns`` turns (``spent``).

    The AgentBuilder agents API's session-level "both sides stopped": one side hitting
    its limit only ends its turn (or its participation); when the other side then hits
    its own, neither would stop on its own and the session ends.
    """
    latest: dict[str, str] = {}
    for outcome in outcomes:
        latest[outcome.side] = outcome.reason
    stopped = {side for side, reason in latest.items() if reason == "max_side_steps"}
    return len(stopped | set(spent)) == 2


def session_turn_cap(max_session_turns: int | None) -> int:
    """``maxSessionTurns``, never above the hard cap of 250."""
    return min(max_session_turns or MAX_SESSION_TURNS, MAX_SESSION_TURNS)


def _property(result: CallResult, name: str | None) -> Any:
    """The stop tool's response property: "extracted from the stop tool's result" (spec), else
    from the call's arguments (a stop tool the engine supplies has no result of its own)."""
    try:
        arguments = parse_arguments(result.call)
    except ValueError:
        arguments = {}
    if name is None:
        return arguments or None
    try:
        parsed = json.loads(result.content) if result.ok else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and name in parsed:
        return parsed[name]
    if name in arguments:
        return arguments[name]
    if not result.ok or isinstance(parsed, dict):
        return None
    return parsed if parsed is not None else result.content


_QUOTED = re.compile(r"(\"[^\"]*\"|'[^']*'|`[^`]*`)")
_PATH = re.compile(r"(/[\w.\-]+)+")
_DIGITS = re.compile(r"\d+")


def error_signature(text: str) -> str:
    """Two errors that differ only in quoted values, paths or numbers have the same signature."""
    text = text.lower().removeprefix("failed to execute tool:").strip()
    text = _DIGITS.sub("", _PATH.sub("", _QUOTED.sub("", text)))
    return " ".join(text.split())[:120]
