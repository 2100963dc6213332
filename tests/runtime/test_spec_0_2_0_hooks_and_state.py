"""Issue #54, rows D1, D3, D5, D6 and E1 (spec 0.2.0) in the engine: the ``tool_call_started``
and ``tool_call_done`` hooks, the trailing hook context, ``move_file``/``rename_file`` with the
``file_moved`` event, ``error_origin`` on logs and ``state.arguments``. Each is observed at
the edge: what the hook or tool received, the frames sent, the stored rows and file tree.

Collected again over ``DjangoStore`` by tests/agents_app/bridge/engine_on_django.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core.spec import AgentDefinition, ResumableConfig, ToolConfig
from runtime.delegation.inline_host import InlineHost
from runtime.engine import Engine
from runtime.providers.test_provider import TestScript
from runtime.store.files import FilePathError
from runtime.store.protocol import LogQuery
from runtime.tools.registry import define_hook, define_tool
from tests.runtime.conftest import World, agent, prompt, side


@define_tool("Echo")
async def echo(state: Any) -> str:
    return "echo result"


@define_tool("Fails")
async def fails(state: Any) -> str:
    raise RuntimeError("bad things")


def _hooked(world: World, *hooks: Any, script: TestScript, on_agent: bool = False) -> None:
    world.register(*hooks, echo, fails)
    ids = [h.id for h in hooks]
    if on_agent:
        world.define(prompt(tools=["echo", "fails"]), agent(hooks=ids))
    else:
        world.define(prompt(tools=["echo", "fails"], hooks=ids), agent())
    world.script("m", script)


# --- D1 --------------------------------------------------------------------------------------


async def test_D1_tool_call_started_and_done_hooks_fire_once_per_call(world: World) -> None:
    seen: list[tuple[str, Any, Any]] = []

    async def started(state: Any, tool_call: Any, progress: Any) -> str:
        seen.append(("started", tool_call["id"], progress))
        return "ignored"  # observational: the return value changes nothing

    async def done(state: Any, tool_call: Any, result: Any) -> str:
        seen.append(("done", tool_call["id"], (result.status, result.result or result.error)))
        return "ignored"

    _hooked(
        world,
        define_hook("tool_call_started", started),
        define_hook("tool_call_done", done),
        script=TestScript()
        .add_tool_call("echo", id="c1")
        .add_tool_call("fails", id="c2")
        .add_text("finished"),
    )
    thread, result = await world.chat("go")

    assert result.final_text == "finished"
    assert seen == [
        ("started", "c1", None),
        ("done", "c1", ("success", "echo result")),
        ("started", "c2", None),
        ("done", "c2", ("error", "bad things")),
    ]
    tools = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert [m.content for m in tools] == ["echo result", "Failed to execute tool: bad things"]
    # The events of the same names still go out, one each per call.
    started_events = world.sink.events(thread.id, "tool_call_started")
    done_events = world.sink.events(thread.id, "tool_call_done")
    assert [e["data"]["id"] for e in started_events] == ["c1", "c2"]
    assert [(e["data"]["id"], e["data"]["status"]) for e in done_events] == [
        ("c1", "success"),
        ("c2", "error"),
    ]


async def test_D1_a_tool_call_hook_that_raises_is_logged_and_the_call_succeeds(
    world: World,
) -> None:
    async def broken(state: Any, tool_call: Any, progress: Any) -> None:
        raise ValueError("hook broke")

    _hooked(
        world,
        define_hook({"hook": "tool_call_started", "id": "watcher", "execute": broken}),
        script=TestScript().add_tool_call("echo").add_text("finished"),
    )
    thread, result = await world.chat("go")

    assert result.final_text == "finished"
    tool = [m for m in await world.messages(thread.id) if m.role == "tool"][0]
    assert (tool.tool_status, tool.content) == ("success", "echo result")
    logs = await world.store.list_logs(thread.id, LogQuery(limit=None, kind="system"))
    assert [(x.error_type, x.error, x.error_origin) for x in logs] == [
        ("hook_error", "Hook watcher failed: hook broke", "hook:watcher")
    ]


# --- D3 --------------------------------------------------------------------------------------


async def test_D3_hooks_that_declare_it_get_the_context_of_the_list_that_named_them(
    world: World,
) -> None:
    contexts: list[Any] = []
    older: list[int] = []

    async def with_context(state: Any, tool_call: Any, result: Any, ctx: Any) -> None:
        contexts.append(ctx)

    async def without_context(state: Any, text: str) -> None:
        older.append(len(text))  # a hook written before 0.2.0: called as before

    _hooked(
        world,
        define_hook("tool_call_done", with_context),
        define_hook("after_system_message", without_context),
        script=TestScript().add_tool_call("echo").add_text("a").add_tool_call("echo").add_text("b"),
    )
    await world.chat("prompt's hooks")
    world.define(prompt(tools=["echo"]), agent(hooks=["with_context", "without_context"]))
    await world.chat("agent's hooks")

    assert contexts == [
        {"source": {"kind": "prompt", "promptName": "main"}},
        {"source": {"kind": "agent", "agentName": "agent"}},
    ]
    assert len(older) == 4  # one per request, no context passed


# --- D5 --------------------------------------------------------------------------------------


class MoveArgs(BaseModel):
    src: str
    dst: str


@define_tool("Move a file", MoveArgs)
async def move(state: Any, args: MoveArgs) -> str:
    record = await state.move_file(args.src, args.dst)
    return record.path


class RenameArgs(BaseModel):
    path: str
    name: str


@define_tool("Rename a file", RenameArgs)
async def rename(state: Any, args: RenameArgs) -> str:
    record = await state.rename_file(args.path, args.name)
    return record.path


async def _files_world(world: World, script: TestScript) -> tuple[Any, Any]:
    world.register(move, rename)
    world.define(prompt(tools=["move", "rename"]), agent())
    world.script("m", script)
    thread = await world.thread()
    state = await world.engine.thread_state(thread.id)
    await state.write_file("/notes/a.txt", "alpha", "text/plain")
    await state.write_file("/notes/deep/b.txt", "beta", "text/plain")
    await state.write_file("/taken.txt", "taken", "text/plain")
    return thread, state


async def _tree(state: Any, path: str = "/") -> list[str]:
    out: list[str] = []
    for entry in await state.readdir(path):
        out.append(entry.path)
        if entry.is_directory:
            out += await _tree(state, entry.path)
    return out


async def test_D5_move_and_rename_change_the_tree_and_send_file_moved(world: World) -> None:
    script = (
        TestScript()
        .add_tool_call("move", {"src": "/notes", "dst": "/archive/2026/notes"})
        .add_tool_call("rename", {"path": "/archive/2026/notes/a.txt", "name": "first.txt"})
        .add_text("moved")
    )
    thread, state = await _files_world(world, script)
    await world.run(thread.id, "tidy up")

    assert await _tree(state) == [
        "/archive",
        "/archive/2026",
        "/archive/2026/notes",
        "/archive/2026/notes/deep",
        "/archive/2026/notes/deep/b.txt",
        "/archive/2026/notes/first.txt",
        "/taken.txt",
    ]
    assert await state.read_file("/archive/2026/notes/first.txt") == b"alpha"
    assert await state.read_file("/archive/2026/notes/deep/b.txt") == b"beta"
    assert await state.stat_file("/notes") is None
    moved = world.sink.events(thread.id, "file_moved")
    assert [(e["data"]["from"], e["data"]["path"]) for e in moved] == [
        ("/notes", "/archive/2026/notes"),
        ("/archive/2026/notes/a.txt", "/archive/2026/notes/first.txt"),
    ]
    assert moved[1]["data"]["file"]["name"] == "first.txt"
    assert moved[1]["data"]["file"]["size"] == 5
    # As the reference: a move is also a deletion and a creation for listeners that know only those.
    assert "/archive/2026/notes/a.txt" in [
        e["data"]["path"] for e in world.sink.events(thread.id, "file_deleted")
    ]


async def test_D5_moving_onto_an_existing_path_or_out_of_the_tree_is_refused(
    world: World,
) -> None:
    script = (
        TestScript()
        .add_tool_call("move", {"src": "/notes/a.txt", "dst": "/taken.txt"})
        .add_tool_call("move", {"src": "/notes/a.txt", "dst": "/../outside.txt"})
        .add_tool_call("rename", {"path": "/notes/a.txt", "name": "../escape.txt"})
        .add_tool_call("move", {"src": "/notes", "dst": "/notes/deep/loop"})
        .add_tool_call("move", {"src": "/nothing.txt", "dst": "/x.txt"})
        .add_text("refused")
    )
    thread, state = await _files_world(world, script)
    before = await _tree(state)
    await world.run(thread.id, "try")

    errors = [m.content for m in await world.messages(thread.id) if m.role == "tool"]
    assert errors == [
        "Failed to execute tool: Destination already exists: /taken.txt",
        "Failed to execute tool: Path escapes the thread's root directory: /../outside.txt",
        "Failed to execute tool: A new name is one path segment, not '../escape.txt'.",
        "Failed to execute tool: Cannot move /notes into itself (/notes/deep/loop).",
        "Failed to execute tool: No such file or directory: /nothing.txt",
    ]
    assert await _tree(state) == before
    assert await state.read_file("/taken.txt") == b"taken"
    assert world.sink.events(thread.id, "file_moved") == []
    with pytest.raises(FilePathError):
        await state.move_file("/", "/elsewhere")


# --- D6 --------------------------------------------------------------------------------------


async def test_D6_error_origin_names_the_tool_the_provider_or_the_runtime(world: World) -> None:
    _hooked(world, script=TestScript().add_tool_call("fails").add_text("after"))
    thread, _ = await world.chat("go")

    logs = await world.store.list_logs(thread.id, LogQuery(limit=None))
    assert [(x.kind, x.error_origin) for x in logs] == [
        ("llm", ""),
        ("tool", "tool:fails"),
        ("llm", ""),
    ]
    frames = [
        f["data"] for f in world.sink.of_type(thread.id, "log_data") if f["data"].get("error")
    ]
    assert frames and {f["error_origin"] for f in frames} == {"tool:fails"}


async def test_D6_a_failed_request_has_a_provider_origin(world: World) -> None:
    _hooked(world, script=TestScript().add_error("rate_limited", status=400))
    thread, _ = await world.chat("go")

    failed = [x for x in await world.store.list_logs(thread.id, LogQuery(limit=None)) if x.error]
    assert failed and {x.error_origin for x in failed} == {"provider:test"}


# --- E1 --------------------------------------------------------------------------------------


@pytest.fixture
def host(world: World) -> InlineHost:
    """The world's engine with an ``InlineHost``: background children run as tasks."""
    inline = InlineHost()
    world._engine = Engine(
        world.store,
        world.sink,
        registry=world.registry,
        providers=world.providers,
        sleep=world._sleep,
        subagent_host=inline,
    )
    inline.engine = world._engine
    return inline


async def test_E1_a_childs_tools_and_hooks_read_the_arguments_it_was_created_with(
    world: World, host: InlineHost
) -> None:
    read: list[tuple[str, Any]] = []

    @define_tool("What was I given?")
    async def given(state: Any) -> str:
        read.append(("tool", state.arguments))
        state.arguments["city"] = "changed"  # a copy: the stored arguments stay
        return "noted"

    async def on_create(state: Any, message: dict[str, Any]) -> None:
        read.append(("hook", state.arguments))

    hook = define_hook("after_create_message", on_create)
    world.register(given, hook)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    entry = ToolConfig(name="helper", blocking=True, resumable=ResumableConfig())
    world.define(
        prompt("main", tools=[entry, "given"]),
        agent("agent", "main"),
        prompt("helper_prompt", model="mc", tools=["given"], required_schema=schema),
        AgentDefinition(name="helper", hooks=[hook.id], side_a=side("helper_prompt")),
    )
    world.script(
        "mc",
        TestScript()
        .add_tool_call("given")
        .add_text("sunny")
        .add_tool_call("given")
        .add_text("still"),
    )
    create = {"agent": "helper", "name": "W", "message": "Weather?", "arguments": {"city": "Oslo"}}
    world.script(
        "m",
        TestScript().add_tool_call("given").add_tool_call("subagent_create", create).add_text("ok"),
    )
    thread, _ = await world.chat("go")
    child = (await world.store.list_children(thread.id))[0]
    child_state = await world.engine.thread_state(child.id)

    assert read[0] == ("tool", {})  # the parent was created with none
    assert ("tool", {"city": "Oslo"}) in read
    assert ("hook", {"city": "Oslo"}) in read
    assert child_state.arguments == {"city": "Oslo"}  # for the child's life, at rest too
    assert (await world.engine.thread_state(thread.id)).arguments == {}
