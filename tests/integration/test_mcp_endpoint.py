"""``/mcp`` of a running Daphne, used by the MCP SDK's own client: agents exposed as tools.

The calls run as sessions on a real Celery worker, in threads owned by the API key's
user; authorization is the thread API's (another user's thread is refused).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.integration.stack import Stack

pytestmark = pytest.mark.integration


@asynccontextmanager
async def mcp_session(stack: Stack, user: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {stack.keys[user]}"} if user else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        streamable_http_client(f"{stack.http}/mcp", http_client=http) as (read, write),
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
        assert oracle.input_schema["required"] == ["message"]
        assert set(oracle.input_schema["properties"]) == {"message", "thread_id"}

        seen, on_progress = _recorder()
        result = await session.call_tool(
            "mcp-oracle", {"message": "What is the answer?"}, progress_callback=on_progress
        )
        assert not result.is_error, result.content
        assert result.content[0].text == "The answer is 42."  # type: ignore[union-attr]
        thread_id = result.structured_content["thread_id"]  # type: ignore[index]
        assert seen, "no progress notification arrived"

        again = await session.call_tool("mcp-oracle", {"message": "Sure?", "thread_id": thread_id})
        assert again.content[0].text == "Still 42."  # type: ignore[union-attr]
        assert again.structured_content["thread_id"] == thread_id  # type: ignore[index]
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
        assert refused.is_error
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
        assert "API key" in response.json()["error"]
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


# --- /mcp behind the API's gates (issue #36, items 6, 9 and 10) -------------------------------

ACCEPT = {"Accept": "application/json, text/event-stream"}


def _call(arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    params = {"name": "mcp-oracle", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _post(stack: Stack, body: Any, user: str = "alice", **headers: str) -> httpx.Response:
    auth = {"Authorization": f"Bearer {stack.keys[user]}"}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        f"{stack.http}/mcp",
        content=content,
        headers={**ACCEPT, **auth, "Content-Type": "application/json", **headers},
        timeout=60,
    )


def _threads_of(stack: Stack, user: str) -> int:
    rows = stack.sql(
        "SELECT count(*) FROM agents_app_thread t JOIN auth_user u ON u.id = t.owner_id "
        "WHERE u.username = %s",
        user,
    )
    return int(rows[0][0])


def _messages_in(stack: Stack, thread_id: str) -> int:
    rows = stack.sql("SELECT count(*) FROM agents_app_message WHERE thread_id = %s", thread_id)
    queued = stack.sql(
        "SELECT count(*) FROM agents_app_queuedmessage WHERE thread_id = %s", thread_id
    )
    return int(rows[0][0]) + int(queued[0][0])


def test_mcp_refuses_foreign_host_and_origin(stack: Stack) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    foreign_host = _post(stack, listing, Host="evil.example")
    assert foreign_host.status_code == 400
    assert foreign_host.json() == {"error": "Invalid Host header (not in ALLOWED_HOSTS)"}
    for origin in ("https://evil.example", "null", f"http://evil.example:{stack.port}"):
        cross_site = _post(stack, listing, Origin=origin)
        assert cross_site.status_code == 403, origin
        assert cross_site.json() == {"error": "Forbidden: cross-site Origin"}
    # Programs send no Origin; a page of the studio's own origin may call it too.
    for headers in ({}, {"Origin": stack.http}):
        allowed = _post(stack, listing, **headers)
        assert allowed.status_code == 200, allowed.text
        assert "mcp-oracle" in allowed.text


def test_mcp_get_stream_is_not_unbounded(stack: Stack) -> None:
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {stack.keys['alice']}"}
    with httpx.stream("GET", f"{stack.http}/mcp", headers=headers, timeout=60) as response:
        status, allow = response.status_code, response.headers.get("allow")
        body = response.read() if status != 200 else b""
    assert (status, allow) == (405, "POST")
    assert "stateless" in json.loads(body)["error"]
    deleted = httpx.delete(f"{stack.http}/mcp", headers=headers, timeout=60)
    assert deleted.status_code == 405


def test_mcp_refuses_nul_and_surrogates_before_creating_anything(stack: Stack) -> None:
    before = _threads_of(stack, "bob")
    cases = [
        (b'"before \\u0000 after"', "Text may not contain NUL"),
        (b'"lone \\ud800 surrogate"', "Text may not contain lone UTF-16 surrogates"),
    ]
    for message, reason in cases:
        raw = (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
            b'"mcp-oracle", "arguments": {"message": ' + message + b"}}}"
        )
        answer = _post(stack, raw, user="bob")
        assert answer.status_code == 200, answer.text
        error = answer.json()["error"]
        assert answer.json()["id"] == 7 and error["code"] == -32602
        assert error["message"].startswith("Invalid request: params.arguments.message: " + reason)
    too_long = _post(stack, _call({"message": "x" * 1_000_001}), user="bob")
    assert too_long.json()["error"]["message"] == (
        "Invalid request: params.arguments.message: at most 1000000 characters"
    )
    assert "xxxx" not in too_long.text  # the refusal does not echo the text back
    assert _threads_of(stack, "bob") == before


async def test_mcp_applies_usage_limits(stack: Stack) -> None:
    # charlie's limits, as the studio's usage limits and spend budgets store them.
    def limit(action: str, amount: int) -> None:
        stack.sql(
            'INSERT INTO agents_app_usagelimit (user_id, action, "limit", period) '
            "SELECT id, %s, %s, 60 FROM auth_user WHERE username = 'charlie' RETURNING id",
            action,
            amount,
        )

    def lift() -> None:
        for table in ("agents_app_usagelimit", "agents_app_spendbudget"):
            stack.sql(
                f"DELETE FROM {table} WHERE user_id = "
                "(SELECT id FROM auth_user WHERE username = 'charlie') RETURNING id"
            )

    lift()
    try:
        thread = stack.client("charlie").post("/api/threads", json={"agent_id": "mcp-oracle"})
        thread_id = thread.json()["threadId"]
        before = _threads_of(stack, "charlie")

        limit("thread_create", 0)
        async with mcp_session(stack, "charlie") as session:
            refused = await session.call_tool("mcp-oracle", {"message": "a new thread?"})
        assert refused.is_error
        assert "Too many new threads" in refused.content[0].text  # type: ignore[union-attr]
        assert _threads_of(stack, "charlie") == before

        lift()
        limit("message_post", 0)
        async with mcp_session(stack, "charlie") as session:
            new = await session.call_tool("mcp-oracle", {"message": "a new thread?"})
            posted = await session.call_tool(
                "mcp-oracle", {"message": "and a post?", "thread_id": thread_id}
            )
        for answer in (new, posted):
            assert answer.is_error
            assert "Too many messages" in answer.content[0].text  # type: ignore[union-attr]
        assert _threads_of(stack, "charlie") == before
        assert _messages_in(stack, thread_id) == 0

        lift()
        stack.sql(
            "INSERT INTO agents_app_spendbudget (user_id, monthly_limit_usd) "
            "SELECT id, 0 FROM auth_user WHERE username = 'charlie' RETURNING id"
        )
        async with mcp_session(stack, "charlie") as session:
            over_budget = await session.call_tool("mcp-oracle", {"message": "a new thread?"})
        assert over_budget.is_error
        assert "monthly spend budget" in over_budget.content[0].text  # type: ignore[union-attr]
        assert _threads_of(stack, "charlie") == before
    finally:
        lift()
