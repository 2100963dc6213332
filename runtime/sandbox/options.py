"""What a caller passes to ``run_code``, and the runtime's own limits.

``CodeExecutionOptions`` is the spec's ``CodeExecutionOptions`` in snake_case.
``SandboxLimits`` are not in the spec: they are this runtime's safety caps
(the child process's OS limits), documented in docs/run-code.md.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Language = Literal["javascript", "typescript"]

MIB = 1024 * 1024
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
# Words a module-scope binding cannot be named (ES reserved words and strict-mode extras).
_JS_RESERVED = frozenset(
    [
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "new",
        "null",
        "return",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "var",
        "void",
        "while",
        "with",
        "yield",
        "let",
        "static",
        "implements",
        "interface",
        "package",
        "private",
        "protected",
        "public",
        "await",
        "arguments",
        "eval",
    ]
)


@dataclass(slots=True)
class Execute:
    """``execute``: which export to run and the arguments to call it with."""

    fn: str = "default"
    args: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class CodeExecutionOptions:
    """Options for ``ThreadState.run_code`` (the spec's ``CodeExecutionOptions``).

    ``imports`` maps a bare specifier to its named exports; ``modules`` maps a
    relative path to module source; ``globals`` are module-scope bindings (not
    on ``globalThis``). Callables anywhere inside ``imports`` or ``globals``
    are bridged: the sandbox gets a function returning a promise, and the call
    runs here, in the host, sync or async. Everything else must be JSON data.
    """

    execute: Execute | None = None
    imports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    modules: Mapping[str, str] = field(default_factory=dict)
    globals: Mapping[str, Any] = field(default_factory=dict)
    language: Language = "typescript"
    memory_limit_bytes: int | None = None
    filename: str = "<runCode>"
    report: Callable[[Any], Any] | None = None

    @classmethod
    def coerce(
        cls, options: CodeExecutionOptions | Mapping[str, Any] | None
    ) -> CodeExecutionOptions:
        """Accept the dataclass or a mapping of its fields; unknown keys are an error, as in the reference."""
        if options is None:
            return cls()
        if isinstance(options, CodeExecutionOptions):
            return options
        values = dict(options)
        execute = values.get("execute")
        if isinstance(execute, Mapping):
            values["execute"] = Execute(**execute)
        try:
            return cls(**values)
        except TypeError as error:
            raise ValueError(f"invalid run_code options: {error}") from None

    def validate(self) -> None:
        if self.language not in ("javascript", "typescript"):
            raise ValueError(
                f"language must be 'javascript' or 'typescript', not {self.language!r}"
            )
        limit = self.memory_limit_bytes
        if limit is not None and (
            isinstance(limit, bool)
            or not isinstance(limit, int | float)
            or not math.isfinite(limit)
            or limit <= 0
        ):
            raise ValueError("memory_limit_bytes must be a positive finite number")
        for name in self.globals:
            check_binding_name(name, "globals")
        if "report" in self.globals and self.report is not None:
            raise ValueError("'report' is both a global and the report sink; pass one")
        for specifier in self.imports:
            if is_relative(specifier) or "://" in specifier or not specifier:
                raise ValueError(f"imports keys are bare specifiers, not {specifier!r}")
        for key in self.modules:
            module_path(key)
        module_path(self.filename)


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """This runtime's caps on every run (not spec options; see docs/run-code.md)."""

    # Engine heap when the caller passes no memory_limit_bytes.
    default_memory_limit_bytes: int = 64 * MIB
    # CPU seconds before the kernel stops the child (SIGXCPU, then SIGKILL).
    cpu_seconds: int = 30
    # Address space on top of the engine heap: the interpreter, its libraries and the parser.
    address_space_headroom_bytes: int = 256 * MIB
    # Engine stack, bounding recursion depth.
    stack_bytes: int = 1 * MIB
    # Protocol bytes (logs, reports, calls) a run may send before it is terminated.
    max_output_bytes: int = 16 * MIB


def is_relative(specifier: str) -> bool:
    return specifier.startswith(("./", "../")) or specifier in (".", "..")


def module_path(key: str) -> str:
    """The graph-root-relative path of a ``modules`` key; keys may not leave the graph."""
    path = posixpath.normpath(key.removeprefix("./"))
    if not key or path == ".." or path.startswith(("../", "/")) or "://" in key:
        raise ValueError(f"module path must stay inside the module graph: {key!r}")
    return path


def check_binding_name(name: str, where: str) -> None:
    if not _IDENTIFIER.match(name) or name in _JS_RESERVED:
        raise ValueError(f"{where} key {name!r} is not a usable JavaScript identifier")
