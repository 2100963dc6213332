"""``/mcp`` serves both eras of the protocol (issue #57): the SDK 2.x's own ``Client`` speaks
2026-07-28 (``server/discover``, no ``initialize``, one request per POST), and a client of
the 2025 revisions still gets its ``initialize`` handshake (here 2025-06-18, spoken as raw
JSON-RPC, since the SDK's client offers only its newest handshake version), over a real
socket to the production composition (``door_server``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agents_app.models import Agent
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

QUESTION = "What is the answer?"
ANSWER = "The answer is 42."
OLD = "2025-06-18"


def _oracle() -> None:
    define_agent("oracle", [{"content": ANSWER, "expectInput": {"containsMessage": QUESTION}}])
    Agent.objects.filter(name="oracle").update(expose_as_tool=True)


def _key(user: Any) -> str:
    return api_key_create(user=user, name="eras")[1]


def _sse_or_json(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a POST (the SDK answers with one SSE event or plain JSON)."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


def test_a_2025_06_18_client_still_initializes_lists_and_calls(server: str, alice: Any) -> None:
    _oracle()
    headers = {
        "Authorization": f"Bearer {_key(alice)}",
        "Accept": "application/json, text/event-stream",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": OLD,
            "capabilities": {},
            "clientInfo": {"name": "old-client", "version": "1"},
        },
    }
    with httpx.Client(base_url=server, headers=headers, timeout=30) as http:
        answer = _sse_or_json(http.post("/mcp", json=init))
        assert answer["result"]["protocolVersion"] == OLD
        assert answer["result"]["capabilities"]["tools"] is not None
        era = {"MCP-Protocol-Version": OLD}
        inited = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post("/mcp", json=inited, headers=era).status_code == 202
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        tools = _sse_or_json(http.post("/mcp", json=listing, headers=era))["result"]["tools"]
        assert [t["name"] for t in tools] == ["oracle"]
        assert tools[0]["inputSchema"]["required"] == ["message"]
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "oracle", "arguments": {"message": QUESTION}},
        }
        result = _sse_or_json(http.post("/mcp", json=call, headers=era))["result"]
    assert result["isError"] is False
    assert result["content"][0]["text"] == ANSWER
    assert result["structuredContent"]["answer"] == ANSWER


def test_the_sdk_client_speaks_2026_07_28_to_mcp(server: str, alice: Any) -> None:
    _oracle()
    key = _key(alice)

    async def ask() -> tuple[str, list[str], Any]:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30)
        )
        async with (
            http,
            Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client,
        ):
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("oracle", {"message": QUESTION})
            return client.protocol_version, names, result

    version, names, result = asyncio.run(ask())
    assert version == "2026-07-28"
    assert names == ["oracle"]
    assert not result.is_error, result.content
    assert result.content[0].text == ANSWER


def test_arguments_outside_the_input_schema_are_a_tool_error(server: str, alice: Any) -> None:
    # The SDK 2.x's low-level server no longer validates arguments; /mcp does, as 1.x did.
    _oracle()
    key = _key(alice)

    async def call() -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with (
            http,
            Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client,
        ):
            await client.list_tools()
            return await client.call_tool("oracle", {"thread_id": "t"})

    result = asyncio.run(call())
    assert result.is_error
    assert result.content[0].text == "Input validation error: 'message' is a required property"
