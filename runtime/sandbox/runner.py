"""The host side of a run: spawn the child, serve its calls, settle the handle.

Every run gets a fresh child process (``child.py``) in its own session, with
an empty environment and only three pipes. The host treats everything the
child says as untrusted: each line is size-capped, parsed and checked, calls
may only name functions this run registered, and the total output is capped.
``terminate`` and every other way a run ends go through SIGKILL to the
child's process group, so nothing the sandbox does can outlive its run.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.sandbox.options import CodeExecutionOptions, Execute, SandboxLimits, module_path
from runtime.sandbox.result import (
    CodeExecutionError,
    CodeExecutionLog,
    CodeExecutionResult,
    CodeExecutionStatus,
)

logger = logging.getLogger(__name__)

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
# -I: ignore PYTHON* variables, the user site and the working directory.
_CHILD_COMMAND = (
    sys.executable,
    "-I",
    "-c",
    f"import sys; sys.path.insert(0, {_PROJECT_ROOT!r}); from runtime.sandbox.child import main; main()",
)
_LINE_LIMIT = 8 * 1024 * 1024
_LEVELS = ("log", "info", "warn", "error", "debug")
_STATUSES = ("success", "error", "memory", "terminated", "link_error")


class _ProtocolError(Exception):
    """The child sent something it should not have."""


class _HostValues:
    """Host values for the sandbox: JSON data, with every callable replaced by a bridge id."""

    def __init__(self) -> None:
        self.functions: list[Callable[..., Any]] = []

    def encode(self, value: Any) -> dict[str, Any]:
        fns: list[list[Any]] = []
        return {"value": self._walk(value, [], fns), "fns": fns}

    def _walk(self, value: Any, path: list[Any], fns: list[list[Any]]) -> Any:
        if callable(value):
            self.functions.append(value)
            fns.append([list(path), len(self.functions) - 1])
            return None
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"cannot pass {value!r} into the sandbox")
            return value
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ValueError(f"keys passed into the sandbox must be strings, not {key!r}")
                out[key] = self._walk(item, [*path, key], fns)
            return out
        if isinstance(value, list | tuple):
            return [self._walk(item, [*path, index], fns) for index, item in enumerate(value)]
        raise ValueError(
            f"cannot pass a {type(value).__name__} into the sandbox (JSON data or callables only)"
        )


class CodeExecution:
    """The handle ``run_code`` returns (the spec's ``CodeExecution``).

    Await it for the ``CodeExecutionResult``. ``terminate(reason)`` stops the
    run (idempotent); ``running`` is true until it settles; ``reports`` is a
    live snapshot of values sent through the ``report`` bridge.
    """

    def __init__(
        self,
        source: str,
        options: CodeExecutionOptions | Mapping[str, Any] | None = None,
        limits: SandboxLimits | None = None,
    ) -> None:
        self._options = CodeExecutionOptions.coerce(options)
        self._options.validate()
        self._limits = limits or SandboxLimits()
        self._host = _HostValues()
        self._config = self._build_config(source)
        self._reports: list[Any] = []
        self._logs: list[CodeExecutionLog] = []
        self._terminate_reason: str | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._calls: set[asyncio.Task[None]] = set()
        self._write_lock = asyncio.Lock()
        self._started = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._run())

    # --- the handle ----------------------------------------------------

    def terminate(self, reason: str | None = None) -> None:
        """Stop the run now: SIGKILL to the child's process group. Later calls do nothing."""
        if self._task.done() or self._terminate_reason is not None:
            return
        self._terminate_reason = reason or "terminated by the caller"
        self._kill()

    @property
    def running(self) -> bool:
        return not self._task.done()

    @property
    def reports(self) -> tuple[Any, ...]:
        return tuple(self._reports)

    def __await__(self) -> Generator[Any, None, CodeExecutionResult]:
        # Not shielded: if the awaiting tool is cancelled, the run is killed with it.
        return self._task.__await__()

    # --- setup ---------------------------------------------------------

    def _build_config(self, source: str) -> dict[str, Any]:
        options = self._options
        execute = options.execute or Execute()
        limit = int(options.memory_limit_bytes or self._limits.default_memory_limit_bytes)
        return {
            "source": source,
            "filename": options.filename,
            "language": options.language,
            "modules": {module_path(key): text for key, text in options.modules.items()},
            "imports": {
                name: self._host.encode(dict(namespace))
                for name, namespace in options.imports.items()
            },
            "globals": self._host.encode(dict(options.globals)),
            "capture_console": "console" not in options.globals,
            "report": options.report is not None,
            "fn": execute.fn,
            "args": self._host.encode(list(execute.args))["value"],
            "memory_limit_bytes": limit,
            "stack_bytes": self._limits.stack_bytes,
        }

    def _header(self) -> dict[str, Any]:
        limits = self._limits
        address_space = self._config["memory_limit_bytes"] + limits.address_space_headroom_bytes
        return {"limits": {"cpu_seconds": limits.cpu_seconds, "address_space_bytes": address_space}}

    # --- the run -------------------------------------------------------

    async def _run(self) -> CodeExecutionResult:
        if self._terminate_reason is not None:
            return self._settle("terminated", error=self._terminated_error())
        final: dict[str, Any] | None = None
        failure: CodeExecutionError | None = None
        status: CodeExecutionStatus | None = None
        sink_tasks: list[asyncio.Future[Any]] = []
        stderr: asyncio.Future[str] | None = None
        try:
            self._process = await asyncio.create_subprocess_exec(
                *_CHILD_COMMAND,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={},  # nothing of the host's environment, secrets included
                cwd="/",
                start_new_session=True,
                limit=_LINE_LIMIT,
            )
            if self._terminate_reason is not None:
                self._kill()
            stderr = asyncio.ensure_future(_drain(self._process.stderr))
            await self._write(self._header())
            await self._write(self._config)
            final, status, failure = await self._serve(sink_tasks)
        except _ProtocolError as error:
            status, failure = "error", CodeExecutionError(name="SandboxError", message=str(error))
        finally:
            self._kill()
            for call in self._calls:
                call.cancel()
            if self._process is not None:
                await self._process.wait()
        if stderr is not None:
            tail = await stderr
            if tail:
                logger.debug("sandbox child stderr: %s", tail)
        if sink_tasks:
            await asyncio.gather(*sink_tasks, return_exceptions=True)
        return self._outcome(final, status, failure)

    async def _serve(
        self, sink_tasks: list[asyncio.Future[Any]]
    ) -> tuple[dict[str, Any] | None, CodeExecutionStatus | None, CodeExecutionError | None]:
        assert self._process is not None and self._process.stdout is not None
        received = 0
        while True:
            try:
                line = await self._process.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                return (
                    None,
                    "terminated",
                    CodeExecutionError(name="OutputLimit", message="a message was too large"),
                )
            if not line:
                return None, None, None
            received += len(line)
            if received > self._limits.max_output_bytes:
                return (
                    None,
                    "terminated",
                    CodeExecutionError(
                        name="OutputLimit", message="the run sent more output than the limit allows"
                    ),
                )
            message = _parse(line)
            kind = message.get("t")
            if kind == "done":
                return message, None, None
            if kind == "call":
                task = asyncio.ensure_future(self._call(message, self._invoke(message)))
                self._calls.add(task)
                task.add_done_callback(self._calls.discard)
            elif kind == "report":
                self._report(message.get("value"), sink_tasks)
            elif kind == "log":
                self._log(message)
            else:
                raise _ProtocolError(f"unknown message {kind!r}")

    def _report(self, value: Any, sink_tasks: list[asyncio.Future[Any]]) -> None:
        self._reports.append(value)
        sink = self._options.report
        if sink is None:
            return
        try:
            outcome = sink(value)
        except Exception:
            logger.exception("run_code report sink failed")
            return
        if inspect.isawaitable(outcome):
            sink_tasks.append(asyncio.ensure_future(outcome))

    def _log(self, message: dict[str, Any]) -> None:
        level, args, timestamp = message.get("level"), message.get("args"), message.get("timestamp")
        if (
            level not in _LEVELS
            or not isinstance(args, list)
            or not isinstance(timestamp, int | float)
        ):
            raise _ProtocolError("malformed log message")
        self._logs.append(CodeExecutionLog(level=level, args=args, timestamp=int(timestamp)))

    def _invoke(self, message: dict[str, Any]) -> Any:
        """Call the host function now, as the line is read, and return what it returned.

        Called synchronously so that a call the sandbox did not await (``console.log`` bridged
        through ``globals``) still runs, in order, even when the run's ``done`` line follows
        it at once: a task scheduled for it would be cancelled before it started.
        """
        fn_id, args = message.get("fn"), message.get("args")
        if (
            not isinstance(fn_id, int)
            or not 0 <= fn_id < len(self._host.functions)
            or not isinstance(args, list)
        ):
            return _BadCall()
        try:
            return self._host.functions[fn_id](*args)
        except Exception as error:
            return _Raised(error)

    async def _call(self, message: dict[str, Any], value: Any) -> None:
        """Finish a call started by ``_invoke``: await its value and reply to the sandbox."""
        call_id = message.get("id")
        reply: dict[str, Any]
        if isinstance(value, _BadCall):
            reply = {
                "t": "reply",
                "id": call_id,
                "ok": False,
                "error": {"name": "Error", "message": "bad call"},
            }
        else:
            try:
                if isinstance(value, _Raised):
                    raise value.error
                if inspect.isawaitable(value):
                    value = await value
                json.dumps(value)  # must cross as JSON
                reply = {"t": "reply", "id": call_id, "ok": True, "value": value}
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # The exception's type and message only: host tracebacks stay in the host.
                reply = {
                    "t": "reply",
                    "id": call_id,
                    "ok": False,
                    "error": {"name": type(error).__name__, "message": str(error)},
                }
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._write(reply)

    async def _write(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        async with self._write_lock:
            with contextlib.suppress(ConnectionError):
                self._process.stdin.write(
                    json.dumps(message, separators=(",", ":")).encode() + b"\n"
                )
                await self._process.stdin.drain()

    def _kill(self) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    # --- settling ------------------------------------------------------

    def _outcome(
        self,
        final: dict[str, Any] | None,
        status: CodeExecutionStatus | None,
        failure: CodeExecutionError | None,
    ) -> CodeExecutionResult:
        if final is not None and self._terminate_reason is None:
            final_status = final.get("status")
            if final_status not in _STATUSES:
                return self._settle(
                    "error", error=CodeExecutionError(name="SandboxError", message="bad status")
                )
            error = _error(final.get("error")) if final_status != "success" else None
            return self._settle(final_status, result=final.get("result"), error=error)
        if self._terminate_reason is not None:
            return self._settle("terminated", error=self._terminated_error())
        if status is not None:
            return self._settle(status, error=failure)
        returncode = self._process.returncode if self._process is not None else None
        if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            return self._settle(
                "terminated",
                error=CodeExecutionError(
                    name="TerminatedError", message="the run hit the CPU time limit"
                ),
            )
        return self._settle(
            "error",
            error=CodeExecutionError(
                name="SandboxError",
                message=f"the sandbox process exited unexpectedly ({returncode})",
            ),
        )

    def _terminated_error(self) -> CodeExecutionError:
        return CodeExecutionError(
            name="TerminatedError", message=self._terminate_reason or "terminated"
        )

    def _settle(
        self,
        status: CodeExecutionStatus,
        result: Any = None,
        error: CodeExecutionError | None = None,
    ) -> CodeExecutionResult:
        return CodeExecutionResult(
            status=status,
            result=result if status == "success" else None,
            reports=list(self._reports),
            logs=list(self._logs),
            error=error,
            duration_ms=(time.monotonic() - self._started) * 1000,
        )


class _BadCall:
    """A call line that names no function of this run, or has no argument list."""


@dataclass(slots=True)
class _Raised:
    """A host function that raised when it was called."""

    error: Exception


def run_code(
    source: str,
    options: CodeExecutionOptions | Mapping[str, Any] | None = None,
    limits: SandboxLimits | None = None,
) -> CodeExecution:
    """Start running ``source`` in a fresh sandbox; needs a running event loop."""
    return CodeExecution(source, options, limits)


def _parse(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        raise _ProtocolError("the sandbox sent a line that is not JSON") from None
    if not isinstance(message, dict):
        raise _ProtocolError("the sandbox sent a message that is not an object")
    return message


def _error(raw: Any) -> CodeExecutionError:
    if not isinstance(raw, dict):
        return CodeExecutionError(name="Error", message="unknown error")
    fields = {}
    for key in ("stack", "specifier", "filename"):
        if isinstance(raw.get(key), str):
            fields[key] = raw[key]
    for key in ("line", "column"):
        if isinstance(raw.get(key), int):
            fields[key] = raw[key]
    return CodeExecutionError(
        name=str(raw.get("name", "Error")), message=str(raw.get("message", "")), **fields
    )


async def _drain(stream: asyncio.StreamReader | None, keep: int = 4096) -> str:
    """Read the child's stderr so it never blocks on a full pipe; keep the tail for debugging."""
    if stream is None:
        return ""
    tail = b""
    while chunk := await stream.read(65536):
        tail = (tail + chunk)[-keep:]
    return tail.decode(errors="replace")
