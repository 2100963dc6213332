"""An agent whose tool is a real MCP server's, for the doors' tests (``/ag-ui``, ``/a2a``):
the test server's ``book`` tool asks which seat (an MCP server's question, tool wait kind
``input``; docs/mcp.md). ``import *`` brings the ``air_server`` fixture, as ``door_server``
does its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from agents_app.models import McpServer
from agents_app.orchestration import executor
from agents_app.services.definitions.mcp_servers import mcp_server_refresh
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.mcp.client import POOL
from runtime.mcp.servers import wire_name
from tests.agents_app.api.api_support import scripted_model
from tests.mcp_servers.processes import HttpMcpServer

QUESTION = "Which seat on flight LH400?"
BOOKED = "Booked seat 12A (a window) on LH400."


@pytest.fixture(scope="module")
def air_server(server: str) -> Iterator[HttpMcpServer]:
    """The test MCP server; its connections, held on the door server's session loop, are
    closed there before that loop stops."""
    mcp = HttpMcpServer().start()
    yield mcp
    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(POOL.aclose(), executor.inprocess.loop()).result(10)
    mcp.stop()


def traveller_agent(mcp: HttpMcpServer, ops: Any) -> None:
    """``traveller``: calls ``mcp:air/book`` for flight LH400 (call id ``c1``), then says ok."""
    row = McpServer.objects.create(name="air", url=mcp.url)
    mcp_server_refresh(server=row, user=ops)
    call = {"name": wire_name("air", "book"), "arguments": {"flight": "LH400"}, "id": "c1"}
    model = scripted_model(
        "m", [{"toolCalls": [call], "finishReason": "tool_calls"}, {"content": "ok"}]
    )
    prompt = PromptDefinition(name="p", model="m", prompt="Book.", tools=["mcp:air/book"])
    agent = AgentDefinition(name="traveller", side_a=SideConfig(prompt="p"))
    save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)


# What ``import *`` brings: the fixture (the rest is imported by name).
__all__ = ["air_server"]
