"""Issue #38 item 9: an MCP server imported from a definitions file gets its tools, so a
prompt's ``mcp:<server>/<tool>`` works at run time (listed at import, or on first use when
the server was down then). Observed at the edges: the import command's exit and output,
the cached row, and the tool message the session stored."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from agents_app.models import McpServer, Message, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.threads import messages as message_service
from runtime.mcp.client import POOL
from tests.agents_app.api.api_support import _api_hosts, scripted_model  # noqa: F401
from tests.mcp_servers.processes import HttpMcpServer


def _write_definitions(root: Path, url: str, **server: Any) -> None:
    for kind in ("mcp", "models", "prompts", "agents"):
        (root / kind).mkdir(parents=True)
    (root / "mcp" / "web.json").write_text(
        json.dumps({"name": "web", "transport": "http", "url": url, **server})
    )
    calls = [{"name": "web__echo", "arguments": {"text": "hi"}, "id": "call_echo"}]
    model = scripted_model(
        "m", [{"toolCalls": calls, "finishReason": "tool_calls"}, {"content": "done"}]
    )
    (root / "models" / "m.json").write_text(model.model_dump_json(by_alias=True))
    prompt = {"name": "p", "model": "m", "prompt": "Use the tools.", "tools": ["mcp:web/echo"]}
    (root / "prompts" / "p.json").write_text(json.dumps(prompt))
    (root / "agents" / "caller.json").write_text(
        json.dumps({"name": "caller", "sideA": {"prompt": "p"}})
    )


def _import(root: Path) -> str:
    out = StringIO()
    call_command("import_definitions", str(root), stdout=out)
    return out.getvalue()


async def _echo_result(alice: Any) -> Message:
    thread = await sync_to_async(thread_create)(user=alice, agent_name="caller")
    await sync_to_async(message_service.message_post)(thread=thread, role="user", content="go")
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    try:
        await run_session_job(str(session.pk))
    finally:
        await POOL.aclose()
    return await sync_to_async(Message.objects.get)(thread=thread, role="tool")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_spec_item9_imported_mcp_server_tools_listed_on_import(
    tmp_path: Path, alice: Any
) -> None:
    server = HttpMcpServer().start()
    try:
        # No allowedTools: the prompt is accepted because the import listed the server's tools.
        await sync_to_async(_write_definitions)(tmp_path, server.url)
        output = await sync_to_async(_import)(tmp_path)
        assert "Imported 4 definitions" in output
        row = await sync_to_async(McpServer.objects.get)(name="web")
        assert "echo" in {t["name"] for t in row.tools}
        assert row.tools_refreshed_at is not None
        tool = await _echo_result(alice)
    finally:
        server.stop()
    assert (tool.tool_status, tool.content) == ("success", "echo: hi")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_spec_item9_mcp_server_down_at_import_is_listed_on_first_use(
    tmp_path: Path, alice: Any
) -> None:
    server = HttpMcpServer()  # its port is chosen, nothing listens yet
    await sync_to_async(_write_definitions)(tmp_path, server.url, allowedTools=["echo"])
    output = await sync_to_async(_import)(tmp_path)
    assert "Could not list the tools of MCP server 'web'" in output
    assert "listed when a session first uses it" in output
    server.start()
    try:
        tool = await _echo_result(alice)
    finally:
        server.stop()
    assert (tool.tool_status, tool.content) == ("success", "echo: hi")
    row = await sync_to_async(McpServer.objects.get)(name="web")
    assert "echo" in {t["name"] for t in row.tools}
