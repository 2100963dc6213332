"""``a2a:<name>`` tools: a remote A2A agent offered to the model as one tool (docs/api.md
"A2A client").

The model sees a tool named after the definition, described by the definition or the
remote Agent Card, taking one ``message`` string. A call sends it through ``A2aAgents``
(``Deps.a2a``; the HTTP client is the host's: ``agents_app/services/doors/a2a_client.py``)
and keeps the remote ``contextId`` in the thread's values (``a2a.<name>``), so the next call
in the same thread continues the remote conversation. Each status update the remote agent
streams is a ``tool_call_progress`` event to the chat while the call runs. A remote
``input-required`` is a result that says what the remote agent asked (the model answers by
calling again: the message then goes to that task); failures are error results in words.
The remote task's **file artifacts** are written to the calling thread's files under
``/a2a/<name>/`` (``save_files``), and the result names each one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from pydantic import BaseModel, Field

from runtime.core.a2a_agents import wire_name
from runtime.core.results import ToolResult, failure, success
from runtime.tools.registry import ToolDefinition

EnvLookup = Callable[[str], Awaitable[str | None]]
Progress = Callable[[str, str], None]  # (remote state, its text) of one status update
PROGRESS_EVENT = "tool_call_progress"
VALUE_PREFIX = "a2a."
# Remote states after which the task takes no more messages (A2A 0.3 names).
DONE_STATES = frozenset({"completed", "canceled", "failed", "rejected"})
FILES_DIR = "/a2a"  # a remote agent's files land in /a2a/<name>/ of the calling thread
FILE_NAME_MAX = 120
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")


class A2aUnavailable(Exception):
    """The remote agent could not be asked (unreachable, refused, a JSON-RPC error, a
    timeout); the message says so in words."""


@dataclass(frozen=True)
class A2aAgentInfo:
    """What the model is told about a remote agent."""

    name: str
    description: str


@dataclass(frozen=True)
class A2aFile:
    """A file artifact of the remote task: its bytes, or why they could not be read."""

    name: str
    mime_type: str
    data: bytes | None
    problem: str = ""


@dataclass(frozen=True)
class A2aReply:
    """How the remote task stands after a call: its state, text, ids and files."""

    state: str
    text: str
    context_id: str | None = None
    task_id: str | None = None
    files: tuple[A2aFile, ...] = ()


class A2aAgents(Protocol):
    """What the engine needs to offer and run ``a2a:`` tools."""

    async def agent(self, name: str, env: EnvLookup | None = None) -> A2aAgentInfo | None:
        """The remote agent's description; ``None`` when it is unknown or disabled (``env``
        resolves ``${NAME}`` in its headers when its card is fetched on first use)."""
        ...

    async def send(
        self,
        name: str,
        message: str,
        *,
        context_id: str | None,
        task_id: str | None,
        env: EnvLookup,
        progress: Progress,
    ) -> A2aReply:
        """Send ``message`` and wait for the task to finish or to need input
        (``A2aUnavailable`` when it cannot)."""
        ...


class A2aArgs(BaseModel):
    message: str = Field(description="What to say to the remote agent.")


def a2a_tool(name: str, info: A2aAgentInfo, agents: A2aAgents) -> ToolDefinition:
    """The native tool that asks remote agent ``name`` (``a2a:<name>``)."""
    wire = wire_name(name)
    key = VALUE_PREFIX + name

    async def ask(state: Any, args: A2aArgs) -> ToolResult:
        saved = await state.get_value(key)
        saved = saved if isinstance(saved, dict) else {}
        call_id = state.execution.tool_call_id if state.execution is not None else None

        def progress(remote_state: str, text: str) -> None:
            data = {"id": call_id, "name": wire, "state": remote_state, "text": text}
            state.emit(PROGRESS_EVENT, data)

        async def env(env_name: str) -> str | None:
            try:
                value: str = await state.env(env_name)
            except KeyError:  # runtime.state.EnvNotFound
                return None
            return value

        try:
            reply = await agents.send(
                name,
                args.message,
                context_id=saved.get("contextId"),
                task_id=saved.get("taskId"),
                env=env,
                progress=progress,
            )
        except A2aUnavailable as exc:
            return failure(f"The remote agent {name} could not be asked: {exc}")
        waiting = reply.state not in DONE_STATES
        await state.set_value(
            key, {"contextId": reply.context_id, "taskId": reply.task_id if waiting else None}
        )
        result = reply_result(name, wire, reply)
        saved = await save_files(state, name, reply.files)
        if saved and result.status == "success":
            result = replace(result, result=f"{result.result}\n\n{saved}")
        elif saved:
            result = replace(result, error=f"{result.error}\n\n{saved}")
        return result

    return ToolDefinition(wire, info.description, A2aArgs, ask)


def reply_result(name: str, wire: str, reply: A2aReply) -> ToolResult:
    """The tool result for a remote task as it stands."""
    if reply.state == "completed":
        return success(reply.text)
    if reply.state in ("input-required", "auth-required"):
        asked = reply.text or "(no question given)"
        return success(
            f"The remote agent {name} needs more input before it can finish. It asked:\n"
            f"{asked}\nCall {wire} again with the answer to continue that task."
        )
    if reply.state in DONE_STATES:
        said = f": {reply.text}" if reply.text else "."
        return failure(f"The remote agent {name} ended the task as {reply.state}{said}")
    said = f" It said so far: {reply.text}" if reply.text else ""
    return failure(
        f"The remote agent {name} had not finished (its task is {reply.state}) when the "
        f"call ended.{said}"
    )


def file_path(name: str, filename: str, taken: set[str]) -> str:
    """Where a remote file lands: ``/a2a/<agent>/<its base name, made safe>``, numbered when
    a file of the same call has that name already."""
    base = _UNSAFE_NAME.sub("_", posixpath.basename(filename.replace("\\", "/"))).strip(" .")
    base = base[:FILE_NAME_MAX] or "file"
    stem, ext = posixpath.splitext(base)
    path, number = f"{FILES_DIR}/{name}/{base}", 1
    while path in taken:
        number += 1
        path = f"{FILES_DIR}/{name}/{stem}-{number}{ext}"
    taken.add(path)
    return path


async def save_files(state: Any, name: str, files: tuple[A2aFile, ...]) -> str:
    """Write the remote task's files to the thread; the words that name them (and the ones
    that could not be read) for the tool result. Empty when there were none."""
    if not files:
        return ""
    lines: list[str] = []
    taken: set[str] = set()
    for item in files:
        if item.data is None:
            lines.append(f"- {item.name}: not saved ({item.problem})")
            continue
        path = file_path(name, item.name, taken)
        await state.write_file(path, item.data, item.mime_type)
        lines.append(f"- {path} ({item.mime_type}, {len(item.data)} bytes)")
    return f"The remote agent {name} returned files, saved in this thread:\n" + "\n".join(lines)
