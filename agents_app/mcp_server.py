"""``/mcp``: the agents exposed as tools, served to MCP clients over streamable HTTP.

A thin adapter over ``agents_app.agent_calls``: the ASGI app authenticates every
request with an API key (as the thread API does; 401 JSON otherwise), then hands
it to the SDK's ``StreamableHTTPSessionManager`` in stateless mode (no MCP session
lives between requests, so any web process can answer any request). A tool call
posts the message through the thread API's services, then waits for the session
while sending progress notifications, and returns the final text and the thread id.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from channels.db import database_sync_to_async
from django.conf import settings
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agents_app.agent_calls import Ask, agent_ask, ask_progress, exposed_agents
from agents_app.errors import DomainError
from agents_app.selectors import access_thread
from agents_app.services.api_keys import api_key_authenticate
from agents_app.services.sessions import thread_stop

logger = logging.getLogger("agents_app.mcp_server")
USER_KEY = "studio.user"
POLL_SECONDS = 0.3
HEARTBEAT_SECONDS = 3.0
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask the agent."},
        "thread_id": {
            "type": "string",
            "description": "Continue this thread (from an earlier answer); omit for a new one.",
        },
    },
    "required": ["message"],
}

server: Server[Any, Any] = Server("standard-agents-studio")


def _user() -> Any:
    request = server.request_context.request
    return request.scope[USER_KEY]  # type: ignore[union-attr]


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    agents = await database_sync_to_async(exposed_agents)()
    return [
        types.Tool(
            name=a.name,
            title=a.title or None,
            description=a.tool_description or f"Ask the {a.title or a.name} agent.",
            inputSchema=INPUT_SCHEMA,
        )
        for a in agents
    ]


@server.call_tool()
async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    user = _user()
    report = _progress_sender()
    try:
        # Shielded: the session can start, and its client give up, before the post returns;
        # a cancellation waits for the post so that the session it made is stopped below.
        with anyio.CancelScope(shield=True):
            ask = await database_sync_to_async(agent_ask)(
                user=user,
                agent_name=name,
                message=str(arguments.get("message") or ""),
                thread_id=arguments.get("thread_id") or None,
            )
    except DomainError as exc:
        return _error(str(exc))
    try:
        progress = await _wait(ask, report)
    except anyio.get_cancelled_exc_class():
        # The call was cancelled (the SDK cancels a request's handler when its transport
        # ends): stop the session it started. Shielded: the scope stays cancelled.
        with anyio.CancelScope(shield=True):
            await database_sync_to_async(_stop_or_log)(ask, user)
        raise
    if progress is None:
        return _error(f"No answer within {settings.MCP_SERVER_CALL_TIMEOUT} s.", ask)
    if progress.error:
        return _error(progress.error, ask)
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=progress.answer),
            types.TextContent(type="text", text=json.dumps({"thread_id": ask.thread_id})),
        ],
        structuredContent={"answer": progress.answer, "thread_id": ask.thread_id},
    )


def _error(text: str, ask: Ask | None = None) -> types.CallToolResult:
    content = [types.TextContent(type="text", text=text)]
    if ask is not None:
        content.append(
            types.TextContent(type="text", text=json.dumps({"thread_id": ask.thread_id}))
        )
    return types.CallToolResult(content=content, isError=True)


def _stop(ask: Ask, user: Any) -> None:
    thread_stop(thread=access_thread(ask.thread_id, user, action="change"))


def _stop_or_log(ask: Ask, user: Any) -> None:
    # Nobody waits for this answer any more: a failure would otherwise vanish with the call.
    try:
        _stop(ask, user)
    except Exception:
        logger.exception(
            "A client went away; could not stop the session of thread %s", ask.thread_id
        )


Report = Callable[[int, str], Awaitable[None]]


def _progress_sender() -> Report:
    ctx = server.request_context
    token = ctx.meta.progressToken if ctx.meta is not None else None

    async def report(count: int, message: str) -> None:
        if token is not None:
            await ctx.session.send_progress_notification(
                token, float(count), message=message, related_request_id=str(ctx.request_id)
            )

    return report


async def _wait(ask: Ask, report: Report) -> Any:
    """Poll the session until it ends (``None`` after ``MCP_SERVER_CALL_TIMEOUT``).

    A progress notification goes out when the session moves on, and at least every
    ``HEARTBEAT_SECONDS``: besides telling the client the call is alive, the write is
    how the server learns that a client went away (Daphne notices a closed connection
    only when it writes to it; the SDK then cancels this handler, which stops the session).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.MCP_SERVER_CALL_TIMEOUT
    last: tuple[int, str] | None = None
    sent, sent_at = 0, 0.0
    while loop.time() < deadline:
        progress = await database_sync_to_async(ask_progress)(ask)
        now = loop.time()
        if (progress.steps, progress.latest) != last or now - sent_at >= HEARTBEAT_SECONDS:
            last, sent, sent_at = (progress.steps, progress.latest), sent + 1, now
            await report(sent, f"{progress.latest} ({progress.steps} new messages)")
        if progress.done:
            return progress
        await asyncio.sleep(POLL_SECONDS)
    return None


# --- the ASGI app -----------------------------------------------------------------------------


class McpApp:
    """Authenticates, then runs the SDK's session manager (started on the first request:
    Daphne sends no ASGI lifespan events)."""

    def __init__(self) -> None:
        self.manager: StreamableHTTPSessionManager | None = None
        self._started: asyncio.Event | None = None

    async def _ensure_running(self) -> StreamableHTTPSessionManager:
        if self._started is None:
            self._started = asyncio.Event()
            self.manager = StreamableHTTPSessionManager(app=server, stateless=True)
            asyncio.get_running_loop().create_task(self._hold(self.manager))
        await self._started.wait()
        assert self.manager is not None
        return self.manager

    async def _hold(self, manager: StreamableHTTPSessionManager) -> None:
        async with manager.run():
            assert self._started is not None
            self._started.set()
            await asyncio.Event().wait()  # for the life of the process

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        user = await database_sync_to_async(_authenticate)(scope)
        if user is None:
            await _json(send, 401, {"detail": "Unauthorized: send Authorization: Bearer <API key>"})
            return
        manager = await self._ensure_running()
        await manager.handle_request({**scope, USER_KEY: user}, receive, send)


def _authenticate(scope: Any) -> Any:
    for name, value in scope.get("headers") or []:
        if name.lower() == b"authorization":
            text = value.decode("latin-1")
            if text[:7].lower() == "bearer ":
                return api_key_authenticate(text[7:].strip())
    return None


async def _json(send: Any, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def with_mcp(django_app: Any, path: str = "/mcp") -> Any:
    """An ASGI app serving ``path`` with MCP and everything else with ``django_app``."""
    mcp_app = McpApp()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") == path:
            await mcp_app(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return app
