"""MCP server tools called by the engine: real servers (``tests/mcp_servers``) over stdio and HTTP.

The engine sees an ``mcp:<server>/<tool>`` entry as an ordinary tool: the result is a
stored tool message and a tool log; a server error or a timeout is an error result
the model reads; images become attachments; a secret used in a header or env value
is redacted from everything kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.core.spec import ScriptedResponse
from runtime.engine import Engine
from runtime.mcp.client import McpConnector, McpPool, discover_tools
from runtime.mcp.servers import (
    McpServer,
    McpServerDefinition,
    McpToolInfo,
    reference_errors,
    wire_name,
)
from runtime.providers.test_provider import TestScript
from runtime.store.protocol import LogQuery
from tests.mcp_servers.processes import HttpMcpServer, stdio_definition
from tests.runtime.conftest import World, agent, prompt

CANARY = "canary-7f3e9b1c5d2a"


class Servers:
    """A ``McpServerSource`` over a dict (what the Django model is to the studio)."""

    def __init__(self) -> None:
        self.servers: dict[str, McpServer] = {}

    async def mcp_server(self, name: str) -> McpServer | None:
        return self.servers.get(name)

    async def remember_tools(self, name: str, tools: list[McpToolInfo]) -> None:
        self.servers[name] = self.servers[name].model_copy(update={"tools": tools})

    async def add(self, definition: McpServerDefinition) -> McpServer:
        async def env(name: str) -> str | None:
            return CANARY if name == "MCP_SECRET" else None

        tools = await discover_tools(definition, env)
        server = McpServer(**definition.model_dump(), tools=tools)
        self.servers[server.name] = server
        return server


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpMcpServer]:
    log = tmp_path_factory.mktemp("mcp") / "cancel.log"
    server = HttpMcpServer(env={"MCP_CANCEL_LOG": str(log)}).start()
    yield server
    server.stop()


@pytest.fixture(params=["http", "stdio"])
def definition(
    request: pytest.FixtureRequest, http_server: HttpMcpServer, tmp_path: Path
) -> McpServerDefinition:
    if request.param == "http":
        return http_server.definition(
            name="tools", headers={"Authorization": "Bearer ${MCP_SECRET}"}, timeout_ms=1500
        )
    return stdio_definition(
        name="tools",
        env={"MCP_TOKEN": "${MCP_SECRET}", "MCP_CANCEL_LOG": str(tmp_path / "cancel.log")},
        timeout_ms=1500,
    )


def cancel_log(definition: McpServerDefinition, http_server: HttpMcpServer) -> Path:
    return Path(definition.env.get("MCP_CANCEL_LOG") or http_server.env["MCP_CANCEL_LOG"])


def mcp_world(world: World, servers: Servers, pool: McpPool) -> World:
    world._engine = Engine(
        world.store,
        world.sink,
        registry=world.registry,
        providers=world.providers,
        sleep=world._sleep,
        mcp=McpConnector(servers, pool),
    )
    return world


async def run_calls(
    world: World, definition: McpServerDefinition, calls: list[dict[str, Any]]
) -> tuple[list[Any], Servers, McpPool]:
    servers, pool = Servers(), McpPool()
    await servers.add(definition)
    mcp_world(world, servers, pool)
    names = sorted({c["name"] for c in calls})
    world.define(agent(), prompt(tools=[f"mcp:tools/{n}" for n in names]))
    wired = [{**c, "name": wire_name("tools", c["name"])} for c in calls]
    world.script("m", TestScript().add_tool_calls(wired).add_text("done"))
    world.harness.set_instance_env("MCP_SECRET", CANARY)
    try:
        thread, result = await world.chat("go")
    finally:
        await pool.aclose()
    assert result.stop_reason == "stop_on_response"
    tools = [m for m in await world.messages(thread.id) if m.role == "tool"]
    return tools, servers, pool


async def test_text_image_failure_and_timeout_become_tool_results(
    world: World, definition: McpServerDefinition, http_server: HttpMcpServer
) -> None:
    tools, _, _ = await run_calls(
        world,
        definition,
        [
            {"name": "echo", "arguments": {"text": "hi"}, "id": "c1"},
            {"name": "pixel", "id": "c2"},
            {"name": "fail", "id": "c3"},
            {"name": "hang", "id": "c4"},
            {"name": "report", "id": "c5"},
        ],
    )
    by_call = {m.tool_call_id: m for m in tools}
    assert by_call["c1"].content == "echo: hi" and by_call["c1"].tool_status == "success"
    assert by_call["c1"].name == "tools__echo"
    image = by_call["c2"].attachments or []
    assert [a["mimeType"] for a in image] == ["image/png"]
    assert by_call["c3"].tool_status == "error" and "broken on purpose" in by_call["c3"].content
    assert by_call["c4"].tool_status == "error" and "did not answer within 1.5 s" in (
        by_call["c4"].content
    )
    assert "all good" in by_call["c5"].content
    # The server was told to stop working on the timed-out call.
    log = cancel_log(definition, http_server)
    await wait_until(lambda: log.exists() and "cancelled" in log.read_text())


async def test_the_image_is_stored_like_any_tool_image(
    world: World, definition: McpServerDefinition
) -> None:
    tools, _, _ = await run_calls(world, definition, [{"name": "pixel", "id": "c1"}])
    path = (tools[0].attachments or [])[0]["path"]
    assert path.startswith("/attachments/")
    thread_id = next(iter(world.sink.frames))
    stored = await world.store.read_file(thread_id, path)
    assert stored is not None and stored[:8] == b"\x89PNG\r\n\x1a\n"
    tool_turn = [m for m in world.requests()[1].messages if m.get("role") == "tool"]
    parts = tool_turn[0]["content"]  # text, then the image for the model (docs/files.md)
    text = " ".join(p.get("text", "") for p in parts if p.get("type") == "text")
    assert f'Attachment path for "image-0.png": {path}' in text
    # ...and the pixels reach the model as an image part (#16's tool-image path).
    assert any(
        p.get("type") == "image_url" and (p.get("attachment") or {}).get("path") == path
        for p in parts
    )


async def test_eight_identical_mcp_errors_stop_the_session(world: World) -> None:
    servers, pool = Servers(), McpPool()
    await servers.add(stdio_definition(name="tools", timeout_ms=5000))
    mcp_world(world, servers, pool)
    world.define(agent(), prompt(tools=["mcp:tools/fail"]))
    script = TestScript()
    for i in range(9):
        script.add_tool_call(wire_name("tools", "fail"), id=f"c{i}")
    world.script("m", script.add_text("never"))
    try:
        _, result = await world.chat("go")
    finally:
        await pool.aclose()
    assert result.stop_reason == "repeated_tool_error"


async def test_the_call_id_is_passed_to_the_server(
    world: World, definition: McpServerDefinition
) -> None:
    tools, _, _ = await run_calls(world, definition, [{"name": "call_meta", "id": "call_xyz"}])
    assert tools[0].content == "callId: call_xyz"


async def test_secret_canary_in_header_or_env_never_kept(
    world: World, definition: McpServerDefinition, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tools, _, _ = await run_calls(world, definition, [{"name": "whoami", "id": "c1"}])
    # An operator-tier secret is marked without its name (no naming oracle, #14 item 6).
    assert "[REDACTED]" in tools[0].content
    kept = json.dumps([m.to_dict() for m in tools], default=str)
    frames = json.dumps(dict(world.sink.frames), default=str)
    logs = []
    for tid in world.sink.frames:
        logs += await world.store.list_logs(tid, LogQuery(limit=None))
    assert any(x.tool_name == "tools__whoami" for x in logs)
    assert CANARY not in kept
    assert CANARY not in frames
    assert CANARY not in json.dumps([dataclasses.asdict(x) for x in logs], default=str)
    assert CANARY not in caplog.text


async def test_unknown_or_disabled_server_tools_are_not_offered(world: World) -> None:
    servers, pool = Servers(), McpPool()
    servers.servers["off"] = McpServer(
        name="off", url="http://127.0.0.1:9/mcp", enabled=False, tools=[{"name": "echo"}]
    )
    mcp_world(world, servers, pool)
    world.define(agent(), prompt(tools=["mcp:off/echo", "mcp:missing/echo"]))
    world.script("m", [ScriptedResponse(content="hi")])
    await world.chat("go")
    assert world.requests()[0].tools == []


async def test_dead_connection_is_reopened_once_then_fails_clearly(world: World) -> None:
    server = HttpMcpServer().start()
    try:
        servers, pool = Servers(), McpPool()
        found = await servers.add(server.definition(name="tools", timeout_ms=5000))

        async def no_env(name: str) -> str | None:
            return None

        assert (await pool.call(found, "echo", {"text": "a"}, call_id="1", env=no_env)).ok
        server.stop()
        server.start()  # same port, new process: the old MCP session is gone
        again = await pool.call(found, "echo", {"text": "b"}, call_id="2", env=no_env)
        assert again.ok and again.result == "echo: b"
        server.stop()
        down = await pool.call(found, "echo", {"text": "c"}, call_id="3", env=no_env)
        assert not down.ok
        assert "MCP server 'tools'" in (down.error or "")
        await pool.aclose()
    finally:
        server.stop()


async def test_stopping_the_session_cancels_the_call_on_the_server(
    world: World, tmp_path: Path
) -> None:
    log = tmp_path / "cancel.log"
    definition = stdio_definition(name="tools", env={"MCP_CANCEL_LOG": str(log)}, timeout_ms=60000)
    servers, pool = Servers(), McpPool()
    await servers.add(definition)
    mcp_world(world, servers, pool)
    world.define(agent(), prompt(tools=["mcp:tools/hang"]))
    world.script("m", TestScript().add_tool_call(wire_name("tools", "hang")).add_text("done"))
    thread = await world.thread()
    task = asyncio.ensure_future(world.run(thread.id, "go"))
    await wait_until(lambda: log.exists() and "started" in log.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: log.exists() and "cancelled" in log.read_text())
    await pool.aclose()


def test_spec_mcp_references_name_a_known_server_and_tool() -> None:
    known: dict[str, set[str] | None] = {"gh": {"search", "issue"}, "new": None}
    assert reference_errors("tools.0", "mcp:gh/search", known) == []
    assert "does not exist" in reference_errors("tools.0", "mcp:nope/search", known)[0].message
    assert "has no tool 'merge'" in reference_errors("tools.0", "mcp:gh/merge", known)[0].message
    assert "not known yet" in reference_errors("tools.0", "mcp:new/x", known)[0].message
    assert "mcp:<server>/<tool>" in reference_errors("tools.0", "mcp:gh", known)[0].message


async def wait_until(check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_a_changed_definition_closes_the_old_connection(http_server: HttpMcpServer) -> None:
    servers, pool = Servers(), McpPool()
    first = await servers.add(http_server.definition(name="tools", timeout_ms=5000))

    async def no_env(name: str) -> str | None:
        return None

    assert (await pool.call(first, "echo", {"text": "a"}, call_id="1", env=no_env)).ok
    [(_, old)] = pool._conns.values()
    changed = first.model_copy(update={"timeout_ms": 6000})
    assert (await pool.call(changed, "echo", {"text": "b"}, call_id="2", env=no_env)).ok
    [(_, new)] = pool._conns.values()
    assert new is not old and old.broken.is_set()  # closed: its task ended
    await pool.aclose()
    assert new.broken.is_set() and not pool._conns
