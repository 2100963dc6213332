"""The sandbox's child process: one QuickJS run under OS resource limits.

Started by ``runner.py`` with a clean environment, no inherited file
descriptors beyond the three pipes, and its own session. It imports what it
needs, then lowers its own limits (address space, CPU time, open files, file
size, core dumps) before it reads a byte of the caller's source, so
everything the untrusted code can reach runs limited. It speaks the JSON-lines
protocol in ``protocol.py`` on stdin/stdout and exits after ``done``.

Only the standard library, ``quickjs``, and the TypeScript eraser are imported
here: the child must start fast and must not drag the engine in.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import resource
import sys
from typing import IO, Any

import quickjs

from runtime.sandbox.typescript import TypeScriptError, erase_types

ROOT = "<root>"
with open(os.path.join(os.path.dirname(__file__), "prelude.js"), encoding="utf-8") as _file:
    _PRELUDE = _file.read()
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_MAX_FRAMES = 50
_FRAME_LOCATION = re.compile(r"\(([^()]*):(\d+):(\d+)\)|at ([^ ()]+):(\d+):(\d+)")


class Child:
    """One run: the module graph, the QuickJS context, and the protocol loop."""

    def __init__(self, config: dict[str, Any], out: IO[bytes], inp: IO[bytes]) -> None:
        self.out = out
        self.inp = inp
        self.config = config
        self.token = os.urandom(8).hex()  # names internal modules; user code cannot guess it
        self.internal = f"<internal-{self.token}>"
        self.scope = f"<scope-{self.token}>"
        self.done = False
        self.next_call = 0
        self.outstanding = 0
        self.missing: str | None = None
        self.modules: dict[str, str] = {}
        self.prefix = ""
        self.baseline_rss = _peak_resident_bytes()

    # --- protocol -------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.out.flush()

    def host(self, kind: str, payload: str) -> int | None:
        """The one function the prelude gets: every sandbox-to-host message goes through it."""
        body = json.loads(payload)
        if kind == "call":
            self.next_call += 1
            self.outstanding += 1
            self.send({"t": "call", "id": self.next_call, "fn": body["fn"], "args": body["args"]})
            return self.next_call
        if kind == "report":
            self.send({"t": "report", "value": body})
        elif kind == "log":
            self.send({"t": "log", **body})
        elif kind == "done":
            self.finish(body)
        return None

    def finish(self, body: dict[str, Any]) -> None:
        if self.done:
            return
        self.done = True
        error = body.get("error")
        if error:
            bare = error.pop("bare", False)
            if bare and body["status"] == "error" and self.heap_peaked():
                body["status"] = "memory"
                error.update(name="InternalError", message="out of memory")
            if body["status"] == "link_error" and self.missing is not None:
                error["specifier"] = _public_name(self.missing)
                error["name"] = "LinkError"
                error["message"] = f"cannot resolve module '{error['specifier']}'"
                error["stack"] = ""
            error = self.clean_error(error)
        self.send(
            {"t": "done", "status": body["status"], "result": body.get("result"), "error": error}
        )

    def heap_peaked(self) -> bool:
        """Whether this process's peak resident memory grew by most of the heap limit.

        The engine's own usage counter is back down once the failed frames
        unwind, but the kernel's high-water mark remembers the peak. (VmHWM,
        not ru_maxrss: the latter starts at the host's size, copied by fork.)
        """
        grown = _peak_resident_bytes() - self.baseline_rss
        return grown >= 0.75 * self.config["memory_limit_bytes"]

    # --- module graph -----------------------------------------------------

    def build(self) -> str:
        """Erase types, name every module, and return the entry module's name."""
        config = self.config
        filename = config["filename"]
        entry = _module_name(filename)
        sources = {entry: config["source"]}
        for key, text in config["modules"].items():
            sources[_module_name(key)] = text
        names = ["console"] if config["capture_console"] else []
        if config["report"]:
            names.append("report")
        names += list(config["globals"]["value"])
        self.prefix = (
            f'import {{ {", ".join(names)} }} from "{self.scope}";'
            if names
            else f'import "{self.scope}";'
        )
        for name, text in sources.items():
            if config["language"] == "typescript":
                text = erase_types(text)
            # On the first line, so every other line keeps its number.
            self.modules[name] = self.prefix + text
        return entry

    def synthetic(self, name: str) -> str | None:
        if name == self.internal:
            return (
                f"const api = globalThis[{json.dumps(self.internal)}];"
                f"delete globalThis[{json.dumps(self.internal)}];"
                "api.linked(); export default api;"
            )
        if name == self.scope:
            lines = [
                f'import api from "{self.internal}";',
                f"const g = api.decode({json.dumps(self.config['globals'])});",
            ]
            if self.config["capture_console"]:
                lines.append("export const console = api.console;")
            if self.config["report"]:
                lines.append("export const report = api.report;")
            for key in self.config["globals"]["value"]:
                lines.append(f"export const {key} = g[{json.dumps(key)}];")
            return "\n".join(lines)
        namespace = self.config["imports"].get(name)
        if namespace is None:
            return None
        lines = [
            f'import api from "{self.internal}";',
            f"const ns = api.decode({json.dumps(namespace)});",
        ]
        for index, key in enumerate(namespace["value"]):
            exported = key if _IDENTIFIER.match(key) else json.dumps(key)
            lines.append(
                f"const e{index} = ns[{json.dumps(key)}]; export {{ e{index} as {exported} }};"
            )
        return "\n".join(lines)

    def load(self, name: str) -> str | None:
        source = self.modules.get(name)
        if source is None:
            source = self.synthetic(name)
        if source is None and self.missing is None:
            self.missing = name
        return source

    # --- errors -------------------------------------------------------

    def clean_error(self, error: dict[str, Any]) -> dict[str, Any]:
        """Keep only sandbox frames, named as the caller named the files."""
        frames: list[str] = []
        for line in str(error.get("stack") or "").splitlines():
            if len(frames) == _MAX_FRAMES:
                frames.append("    ...")
                break
            if "<prelude>" in line or "<input>" in line or self.token in line:
                continue
            frames.append(_FRAME_LOCATION.sub(self._frame, line))
        error["stack"] = "\n".join(frames)
        if error.get("filename"):
            error["filename"] = _public_name(error["filename"])
            if error.get("line") == 1 and error.get("column"):
                error["column"] = max(1, error["column"] - len(self.prefix))
        elif frames:
            first = _FRAME_LOCATION.search(error["stack"])
            if first:
                file, line, column = [g for g in first.groups() if g is not None]
                error.update(filename=file, line=int(line), column=int(column))
        return {key: value for key, value in error.items() if value not in (None, "")}

    def _frame(self, match: re.Match[str]) -> str:
        file, line, column = [g for g in match.groups() if g is not None]
        column_number = int(column)
        if line == "1" and file.startswith(ROOT + "/"):
            column_number = max(1, column_number - len(self.prefix))
        location = f"{_public_name(file)}:{line}:{column_number}"
        return f"({location})" if match.group(0).startswith("(") else f"at {location}"

    # --- run ----------------------------------------------------------

    def run(self) -> None:
        try:
            entry = self.build()
        except TypeScriptError as error:
            self.finish(
                {
                    "status": "link_error",
                    "error": {
                        "name": "SyntaxError",
                        "message": error.message,
                        "line": error.line,
                        "column": error.column,
                        "filename": self.config["filename"],
                    },
                }
            )
            return
        runtime = quickjs.Runtime()
        runtime.set_memory_limit(self.config["memory_limit_bytes"])
        runtime.set_max_stack_size(self.config["stack_bytes"])
        context = runtime.new_context()
        context.set_module_loader(self.load)
        controls = context.eval(_PRELUDE, filename="<prelude>")(self.host, self.internal)
        settle = controls.get("settle")
        controls.get("start").call(entry, self.config["fn"], json.dumps(self.config["args"]))
        while not self.done:
            while not self.done and context.execute_pending_job():
                pass
            if self.done:
                break
            if self.outstanding == 0:
                # Out of memory, the engine may fail to even reject a promise.
                self.finish(_out_of_memory() if self.heap_peaked() else _never_settled())
                break
            line = self.inp.readline()
            if not line:
                return
            reply = json.loads(line)
            self.outstanding -= 1
            payload = json.dumps(reply["value"] if reply["ok"] else reply["error"])
            settle.call(reply["id"], bool(reply["ok"]), payload)


def _out_of_memory() -> dict[str, Any]:
    return {"status": "memory", "error": {"name": "InternalError", "message": "out of memory"}}


def _never_settled() -> dict[str, Any]:
    return {
        "status": "error",
        "error": {
            "name": "Error",
            "message": "the run can never finish: it awaits a promise nothing will settle",
        },
    }


def _module_name(key: str) -> str:
    path = posixpath.normpath(key.removeprefix("./"))
    if path.startswith("../") or path == ".." or path.startswith("/"):
        raise ValueError(f"module path escapes the module graph: {key!r}")
    return f"{ROOT}/{path}"


def _public_name(name: str) -> str:
    return name.removeprefix(ROOT + "/")


# Opened before the open-files limit, so the peak can still be read after it.
_STATUS_FD = os.open("/proc/self/status", os.O_RDONLY)


def _peak_resident_bytes() -> int:
    for line in os.pread(_STATUS_FD, 8192, 0).decode().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def limit_resources(limits: dict[str, int]) -> None:
    """Lower this process's own limits; they cannot be raised again."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(
        resource.RLIMIT_AS, (limits["address_space_bytes"], limits["address_space_bytes"])
    )
    # No new files, sockets or pipes (descriptors already open keep working).
    resource.setrlimit(resource.RLIMIT_NOFILE, (0, 0))


def main() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    # Nothing but protocol lines may reach stdout.
    sys.stdout = sys.stderr
    header = json.loads(inp.readline())
    limit_resources(header["limits"])
    config = json.loads(inp.readline())
    child = Child(config, out, inp)
    try:
        child.run()
    except MemoryError:
        child.finish(_out_of_memory())
    out.flush()
    os._exit(0)
