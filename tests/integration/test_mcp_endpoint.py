"""``/mcp`` of a running Daphne, used by the MCP SDK's own client: agents exposed as tools.

The calls run as sessions on a real Celery worker, in threads owned by the API key's
user; authorization is the thread API's (another user's thread is refused).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.integration.stack import Stack

pytestmark = pytest.mark.integration


@asynccontextmanager
async def mcp_session(stack: Stack, user: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {stack.keys[user]}"} if user else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=120)) as http,
        streamable_http_client(f"{stack.http}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _recorder() -> tuple[list[tuple[float, str | None]], Callable[..., Any]]:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    return seen, on_progress


async def test_sdk_client_lists_exposed_agents_and_gets_answers_with_progress(
    stack: Stack, worker: Any
) -> None:
    worker("w-mcp")
    async with mcp_session(stack, "alice") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "mcp-oracle" in tools and "greeter" not in tools
        oracle = tools["mcp-oracle"]
        assert oracle.description == "Answers questions about life, the universe and everything."
        assert oracle.inputSchema["required"] == ["message"]
        assert set(oracle.inputSchema["properties"]) == {"message", "thread_id"}

        seen, on_progress = _recorder()
        result = await session.call_tool(
            "mcp-oracle", {"message": "What is the answer?"}, progress_callback=on_progress
        )
        assert not result.isError, result.content
        assert result.content[0].text == "The answer is 42."  # type: ignore[union-attr]
        thread_id = result.structuredContent["thread_id"]  # type: ignore[index]
        assert seen, "no progress notification arrived"

        again = await session.call_tool("mcp-oracle", {"message": "Sure?", "thread_id": thread_id})
        assert again.content[0].text == "Still 42."  # type: ignore[union-attr]
        assert again.structuredContent["thread_id"] == thread_id  # type: ignore[index]
    owner = stack.sql(
        "SELECT u.username FROM agents_app_thread t JOIN auth_user u ON u.id = t.owner_id "
        "WHERE t.id = %s",
        thread_id,
    )
    assert owner == [("alice",)]

    async with mcp_session(stack, "bob") as session:
        refused = await session.call_tool(
            "mcp-oracle", {"message": "Let me in", "thread_id": thread_id}
        )
        assert refused.isError
        assert "access to this thread" in refused.content[0].text  # type: ignore[union-attr]
    messages = stack.sql("SELECT count(*) FROM agents_app_message WHERE thread_id = %s", thread_id)
    assert messages == [(4,)]  # bob's message was never stored


async def test_unauthenticated_mcp_requests_are_refused(stack: Stack) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer agtbldr_" + "0" * 64}):
        response = httpx.post(f"{stack.http}/mcp", json=body, headers={**accept, **headers})
        assert response.status_code == 401
        assert response.headers["content-type"] == "application/json"
        assert "API key" in response.json()["detail"]
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 as it likes
        async with mcp_session(stack, None) as session:
            await session.list_tools()


async def test_client_that_goes_away_stops_the_session(stack: Stack, worker: Any) -> None:
    worker("w-mcp-stop")

    def sessions() -> list[tuple[Any, ...]]:
        return stack.sql(
            "SELECT s.status FROM agents_app_threadsession s JOIN agents_app_thread t "
            "ON t.id = s.thread_id JOIN agents_app_agent a ON a.id = t.agent_id "
            "WHERE a.name = 'mcp-sleeper'"
        )

    seen, on_progress = _recorder()
    async with mcp_session(stack, "alice") as session:
        call = asyncio.ensure_future(
            session.call_tool("mcp-sleeper", {"message": "slowly"}, progress_callback=on_progress)
        )
        await async_wait(lambda: sessions() == [("running",)], "the session to run")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    # The client went away: the server notices at its next progress write and stops the
    # session it started (the scripted reply would take 40 s).
    await async_wait(
        lambda: sessions() == [("stopped",)], f"the session to be stopped ({sessions()})"
    )
    assert seen


async def async_wait(check: Callable[[], Any], what: str, timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)
