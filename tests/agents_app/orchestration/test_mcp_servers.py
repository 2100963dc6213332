"""MCP servers in the studio's data: the stdio policy, references checked at save time,
``mcp/<name>.json`` files, tool discovery, and an agent calling real MCP servers through
the services (post a message, the session job runs it) with a planted secret canary.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from agents_app.base.errors import Invalid
from agents_app.models import EnvValue, Log, McpServer, Message, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.files import (
    DefinitionFilesInvalid,
    definitions_export,
    definitions_import,
)
from agents_app.services.definitions.mcp_servers import mcp_server_refresh, mcp_server_save
from agents_app.services.definitions.rows import DefinitionsInvalid
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.mcp.client import POOL
from runtime.mcp.servers import McpServerDefinition, wire_name
from tests.agents_app.api.api_support import _api_hosts, scripted_model  # noqa: F401
from tests.mcp_servers.processes import HttpMcpServer, stdio_definition

CANARY = "canary-MCP-5e1b7d93a0"


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer().start()
    yield server
    server.stop()


def _prompt_with(tools: list[str]) -> PromptDefinition:
    return PromptDefinition(name="p", model="m", prompt="Use the tools.", tools=tools)


# --- save-time rules -----------------------------------------------------------------------


@pytest.mark.django_db
def test_stdio_server_refused_unless_the_setting_allows_it(ops: Any, alice: Any) -> None:
    definition = stdio_definition()
    with pytest.raises(Invalid, match="MCP_ALLOW_STDIO"):
        mcp_server_save(definition=definition, actor=ops)
    with override_settings(MCP_ALLOW_STDIO=True):
        with pytest.raises(Invalid, match="Only superusers"):
            mcp_server_save(definition=definition, actor=alice)
        assert mcp_server_save(definition=definition, actor=ops).transport == "stdio"


@pytest.mark.django_db
def test_literal_credential_in_a_header_is_refused(ops: Any) -> None:
    definition = McpServerDefinition(
        name="gh", url="https://mcp.example.com/mcp", headers={"Authorization": "Bearer abc123"}
    )
    with pytest.raises(Invalid, match=r"\$\{NAME\}"):
        mcp_server_save(definition=definition, actor=ops)


@pytest.mark.django_db
def test_spec_prompt_refused_for_unknown_mcp_server_or_tool() -> None:
    McpServer.objects.create(name="web", url="http://x/mcp", tools=[{"name": "echo"}])
    McpServer.objects.create(name="fresh", url="http://y/mcp")
    model = ("m", scripted_model("m"))
    save_definitions([model, ("p", _prompt_with(["mcp:web/echo"]))], strict_code_names=False)
    for tools, words in [
        (["mcp:nope/echo"], "MCP server 'nope' does not exist"),
        (["mcp:web/merge"], "has no tool 'merge'"),
        (["mcp:fresh/echo"], "not known yet"),
    ]:
        with pytest.raises(DefinitionsInvalid, match=words):
            save_definitions([model, ("p", _prompt_with(tools))], strict_code_names=False)


@pytest.mark.django_db
def test_definition_files_round_trip_mcp_servers(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "mcp").mkdir(parents=True)
    (src / "models").mkdir()
    (src / "prompts").mkdir()
    server = {
        "name": "web",
        "transport": "http",
        "url": "https://mcp.example.com/mcp",
        "headers": {"Authorization": "Bearer ${WEB_TOKEN}"},
        "timeoutMs": 5000,
        "allowedTools": ["echo"],
    }
    (src / "mcp" / "web.json").write_text(json.dumps(server))
    (src / "models" / "m.json").write_text(scripted_model("m").model_dump_json(by_alias=True))
    (src / "prompts" / "p.json").write_text(
        json.dumps({"name": "p", "model": "m", "prompt": "x", "tools": ["mcp:web/echo"]})
    )
    report = definitions_import(directory=src)
    assert "mcp/web" in report.created
    out = tmp_path / "out"
    definitions_export(directory=out)
    assert json.loads((out / "mcp" / "web.json").read_text()) == server

    (src / "prompts" / "p.json").write_text(
        json.dumps({"name": "p", "model": "m", "prompt": "x", "tools": ["mcp:web/other"]})
    )
    with pytest.raises(DefinitionFilesInvalid, match="has no tool 'other'"):
        definitions_import(directory=src)


@pytest.mark.django_db
def test_stdio_file_refused_on_import_when_stdio_is_off(tmp_path: Path) -> None:
    (tmp_path / "mcp").mkdir()
    data = stdio_definition(name="local").dump()
    (tmp_path / "mcp" / "local.json").write_text(json.dumps(data))
    with pytest.raises(DefinitionFilesInvalid, match="MCP_ALLOW_STDIO"):
        definitions_import(directory=tmp_path)
    assert not McpServer.objects.exists()


# --- discovery ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_refresh_caches_the_tools_or_says_what_failed(ops: Any, http_server: HttpMcpServer) -> None:
    row = mcp_server_save(definition=http_server.definition(name="web"), actor=ops)
    tools = mcp_server_refresh(server=row, user=ops)
    assert {"echo", "pixel", "fail", "hang"} <= {t.name for t in tools}
    row.refresh_from_db()
    assert row.tools_refreshed_at is not None and row.last_error == ""

    dead = mcp_server_save(
        definition=McpServerDefinition(name="dead", url="http://127.0.0.1:9/mcp"), actor=ops
    )
    with pytest.raises(Invalid, match="Could not list the tools of 'dead'"):
        mcp_server_refresh(server=dead, user=ops)
    dead.refresh_from_db()
    assert "Could not list" in dead.last_error


# --- an agent calls MCP tools through the services ------------------------------------------


def _define(server: McpServerDefinition, ops: Any, tools: list[str]) -> None:
    secret = EnvValue(scope=EnvValue.Scope.INSTANCE, key="MCP_SECRET", value_type="secret")
    secret.value = CANARY
    secret.save()
    row = mcp_server_save(definition=server, actor=ops)
    mcp_server_refresh(server=row, user=ops)
    calls = [
        {
            "name": wire_name(server.name, t),
            "arguments": {"text": "hi"} if t == "echo" else {},
            "id": f"call_{t}",
        }
        for t in tools
    ]
    model = scripted_model(
        "m", [{"toolCalls": calls, "finishReason": "tool_calls"}, {"content": "done"}]
    )
    prompt = PromptDefinition(
        name="p",
        model="m",
        prompt="Use the tools.",
        tools=[f"mcp:{server.name}/{t}" for t in tools],
    )
    agent = AgentDefinition(name="caller", side_a=SideConfig(prompt="p"))
    save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_agent_calls_mcp_tools_through_the_service(
    transport: str,
    ops: Any,
    alice: Any,
    http_server: HttpMcpServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    if transport == "http":
        server = http_server.definition(
            name="tools", headers={"Authorization": "Bearer ${MCP_SECRET}"}, timeout_ms=1500
        )
    else:
        server = stdio_definition(name="tools", env={"MCP_TOKEN": "${MCP_SECRET}"}, timeout_ms=1500)
    with override_settings(MCP_ALLOW_STDIO=True):
        await sync_to_async(_define)(server, ops, ["echo", "pixel", "fail", "hang", "whoami"])
    thread = await sync_to_async(thread_create)(user=alice, agent_name="caller")
    await sync_to_async(message_service.message_post)(thread=thread, role="user", content="go")
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    try:
        await run_session_job(str(session.pk))
    finally:
        await POOL.aclose()
    rows = await sync_to_async(list)(Message.objects.filter(thread=thread, role="tool"))
    by_call = {r.tool_call_id: r for r in rows}
    assert by_call["call_echo"].content == "echo: hi"
    assert by_call["call_echo"].tool_status == "success"
    assert [a["mimeType"] for a in by_call["call_pixel"].attachments] == ["image/png"]
    assert by_call["call_fail"].tool_status == "error"
    assert "broken on purpose" in by_call["call_fail"].content
    assert "did not answer within 1.5 s" in by_call["call_hang"].content
    # An operator-tier secret is marked without its name (no naming oracle, #14 item 6).
    assert "[REDACTED]" in by_call["call_whoami"].content
    logs = await sync_to_async(list)(Log.objects.filter(thread=thread, kind="tool"))
    assert {x.tool_name for x in logs} >= {"tools__echo", "tools__whoami"}
    final = await sync_to_async(
        lambda: Message.objects.filter(thread=thread, role="assistant").order_by("-created_at")[0]
    )()
    assert final.content == "done"
    hits = await sync_to_async(_canary_hits)()
    assert hits == []
    assert CANARY not in caplog.text


def _canary_hits() -> list[str]:
    from django.db import connection

    hits = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            if table == "agents_app_envvalue":
                continue
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            hits += [table for row in cursor.fetchall() if CANARY in repr(row)]
    return hits
