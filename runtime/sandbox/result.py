"""What a run settles with: the spec's ``CodeExecutionResult`` and its parts, in snake_case."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

CodeExecutionStatus = Literal["success", "error", "memory", "terminated", "link_error"]
LogLevel = Literal["log", "info", "warn", "error", "debug"]


@dataclass(slots=True)
class CodeExecutionLog:
    """One captured ``console.*`` call; ``args`` are marshaled (deep-copied) values."""

    level: LogLevel
    args: list[Any]
    timestamp: int  # milliseconds since the epoch, taken in the sandbox


@dataclass(slots=True)
class CodeExecutionError:
    """Why a run did not succeed. ``stack`` holds sandbox frames only, never host paths."""

    name: str
    message: str
    stack: str | None = None
    specifier: str | None = None  # the module that failed to link
    filename: str | None = None
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based


@dataclass(slots=True)
class CodeExecutionResult:
    """The settled outcome of ``run_code``; ``error`` is set iff ``status`` is not ``success``."""

    status: CodeExecutionStatus
    duration_ms: float
    result: Any = None
    reports: list[Any] = field(default_factory=list)
    logs: list[CodeExecutionLog] = field(default_factory=list)
    error: CodeExecutionError | None = None
    memory_used_bytes: int | None = None
