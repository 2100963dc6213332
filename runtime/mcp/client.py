"""Calling MCP servers: one reused connection per server, event loop and resolved credentials.

``McpConnector`` is what the engine talks to (``runtime.mcp.servers.McpTools``); ``McpPool``
keeps this process's connections (``runtime.mcp.connection.Connection``, the only module that
imports the SDK, which costs about a second of CPU: it is imported on the first connection,
so a ``manage.py`` command or a worker whose agents use no MCP server never pays it).

A connection is "broken" when its task ended, the transport reported an error, or the server
answered "connection closed" / "session terminated": the call then reopens it once and tries
again (the call id travels in ``_meta.callId`` so a server can recognise the retry), and a
second loss fails the call with a plain sentence. A call that times out, or whose session is
stopped, is cancelled through the SDK, which tells the server.

A server's question to the person comes one of two ways (docs/mcp.md, "When a server asks
the person"): on 2026-07-28 the call answers ``input_required`` and waits durably
(``McpNeedsInput``); a 2025-era server sends ``elicitation/create`` while the call is open,
which the call's ``ask`` answers while the call is held (``Connection._elicit``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any, Protocol

from runtime.core.results import ToolResult, failure
from runtime.mcp.servers import (
    NOBODY_TO_ASK,
    EnvLookup,
    McpAsk,
    McpCallTimeout,
    McpConfigError,
    McpNeedsInput,
    McpServer,
    McpServerDefinition,
    McpToolInfo,
    McpUnavailable,
    resolve_values,
    result_from_content,
)

if TYPE_CHECKING:
    from runtime.mcp.connection import Connection

__all__ = ["NOBODY_TO_ASK", "POOL", "McpConnector", "McpPool", "McpUnavailable", "discover_tools"]

logger = logging.getLogger("runtime.mcp.client")

# Starting a server (a stdio child imports the SDK) may take longer than one call may.
MIN_CONNECT_SECONDS = 15.0


class McpServerSource(Protocol):
    """Where server definitions come from (the host's database, a dict in tests)."""

    async def mcp_server(self, name: str) -> McpServer | None:
        """The server with its cached tools, or ``None`` when unknown."""
        ...

    async def remember_tools(self, name: str, tools: list[McpToolInfo]) -> None:
        """Cache the tool list of a server listed at run time (its first use)."""
        ...


class McpTokenSource(Protocol):
    """The person's OAuth access token for an ``auth: oauth`` server (the host's store)."""

    async def access_token(self, server: McpServer, thread_id: str | None) -> str:
        """A valid token of the thread owner (refreshed when expired); ``McpConfigError``
        says in words, with the link, that the person must connect first."""
        ...


# --- the pool -------------------------------------------------------------------------------


class McpPool:
    """Connections of this process, per event loop and per resolved configuration.

    Two users whose header secrets differ get two connections (the key is a hash of
    the resolved headers and env), so one never calls with the other's credentials.
    """

    def __init__(self) -> None:
        self._conns: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, Connection]] = {}
        self._locks: dict[tuple[int, str], asyncio.Lock] = {}

    async def call(
        self,
        server: McpServer,
        tool: str,
        args: dict[str, Any],
        *,
        call_id: str,
        env: EnvLookup,
        bearer: str | None = None,
        resume: dict[str, Any] | None = None,
        ask: McpAsk | None = None,
    ) -> ToolResult:
        """Run ``tool``; every failure is an error result with a sentence the model can use.
        ``bearer``: the person's OAuth access token (``auth: oauth`` servers); ``ask``: puts a
        2025-era server's mid-call question to the person (without it, it is refused)."""
        label = f"MCP tool '{server.name}/{tool}'"
        try:
            headers, child_env = await resolved(server, env)
        except McpConfigError as exc:
            return failure(f"{label} cannot be called: {exc}")
        if bearer is not None:
            headers = {**headers, "Authorization": f"Bearer {bearer}"}
        timeout = server.timeout_ms / 1000
        # The SDK, on the first call (module docstring); loaded from then on.
        from mcp import MCPError

        for attempt in (1, 2):
            try:
                conn = await self._connection(server, headers, child_env)
            except McpUnavailable as exc:
                return failure(
                    f"Could not connect to MCP server '{server.name}': {str(exc).rstrip('.')}."
                )
            try:
                raw = await conn.call(tool, args, call_id, timeout, resume, ask)
            except McpUnavailable as exc:
                await self._discard(server, conn)
                if attempt == 2:
                    return failure(
                        f"The connection to MCP server '{server.name}' was lost again after "
                        f"reopening it ({exc}); the call did not complete."
                    )
                continue
            except McpCallTimeout:
                return failure(f"{label} did not answer within {timeout:g} s; it was cancelled.")
            except McpNeedsInput as asked:
                odd = [q for q in asked.details["questions"] if q.get("mode") != "form"]
                if odd:
                    what = odd[0].get("unsupported") or f"a {odd[0].get('mode')} elicitation"
                    return failure(f"{label} asked for {what}, which this platform cannot answer.")
                raise
            except MCPError as exc:
                return failure(f"{label} failed: {exc.error.message}")
            return result_from_content(
                [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in raw.content],
                raw.structured_content,
                raw.is_error,
            )
        raise AssertionError("unreachable")

    async def _connection(
        self, server: McpServer, headers: dict[str, str], env: dict[str, str]
    ) -> Connection:
        loop = asyncio.get_running_loop()
        key = (id(loop), _fingerprint(server, headers, env))
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            held = self._conns.get(key)
            if held is not None and held[0] is loop and not held[1].broken.is_set():
                return held[1]
            await self._close_outdated(loop, server)
            from runtime.mcp.connection import Connection  # the SDK, on first use (module doc)

            conn = Connection(server, headers, env)
            await conn.open(max(MIN_CONNECT_SECONDS, server.timeout_ms / 1000))
            self._conns[key] = (loop, conn)
            return conn

    async def _close_outdated(self, loop: asyncio.AbstractEventLoop, server: McpServer) -> None:
        """Close this loop's connections to ``server`` made with an older definition."""
        current = McpServerDefinition.model_validate(server.model_dump(exclude={"tools"}))
        for key, (held_loop, held) in list(self._conns.items()):
            if held_loop is loop and held.server.name == server.name:
                old = McpServerDefinition.model_validate(held.server.model_dump(exclude={"tools"}))
                if old != current:
                    del self._conns[key]
                    await held.close()

    async def _discard(self, server: McpServer, conn: Connection) -> None:
        for key, (_, held) in list(self._conns.items()):
            if held is conn:
                del self._conns[key]
        await conn.close()

    async def aclose(self) -> None:
        """Close this loop's connections (worker shutdown, tests)."""
        loop = asyncio.get_running_loop()
        mine = [(k, c) for k, (lp, c) in self._conns.items() if lp is loop]
        for key, conn in mine:
            del self._conns[key]
            await conn.close()


async def resolved(
    server: McpServerDefinition, env: EnvLookup
) -> tuple[dict[str, str], dict[str, str]]:
    """The server's headers and env with ``${NAME}`` resolved."""
    headers = await resolve_values(server.headers, env, "Header")
    child_env = await resolve_values(server.env, env, "Environment variable")
    return headers, child_env


def _fingerprint(server: McpServerDefinition, headers: dict[str, str], env: dict[str, str]) -> str:
    config = server.model_dump(mode="json") | {"headers": headers, "env": env}
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    return f"{server.name}:{digest}"


async def discover_tools(
    server: McpServerDefinition, env: EnvLookup, bearer: str | None = None
) -> list[McpToolInfo]:
    """Connect afresh, list every tool, close. ``McpUnavailable`` says why it failed.
    ``bearer``: the person's OAuth access token (``auth: oauth`` servers)."""
    try:
        headers, child_env = await resolved(server, env)
    except McpConfigError as exc:
        raise McpUnavailable(str(exc)) from None
    if bearer is not None:
        headers = {**headers, "Authorization": f"Bearer {bearer}"}
    from runtime.mcp.connection import list_tools_once  # the SDK, on first use (module doc)

    return await list_tools_once(server, headers, child_env, MIN_CONNECT_SECONDS)


# --- what the engine talks to -----------------------------------------------------------------

POOL = McpPool()


class McpConnector:
    """``runtime.mcp.servers.McpTools`` over a server source and the process's pool.

    Servers are read afresh for each lookup (one small query): an engine may live long
    (the effect sweeper's), and a disabled server or a changed timeout applies at once.
    """

    def __init__(
        self,
        source: McpServerSource,
        pool: McpPool = POOL,
        tokens: McpTokenSource | None = None,
    ) -> None:
        self.source, self.pool, self.tokens = source, pool, tokens

    async def _server(self, name: str) -> McpServer | None:
        server = await self.source.mcp_server(name)
        return server if server is not None and server.enabled else None

    async def tool(
        self, server: str, name: str, env: EnvLookup | None = None
    ) -> McpToolInfo | None:
        found = await self._server(server)
        if found is not None and not found.tools and env is not None:
            found = await self._list_once(found, env)
        return found.tool(name) if found is not None else None

    async def _list_once(self, server: McpServer, env: EnvLookup) -> McpServer:
        """A server whose tools were never listed (e.g. imported from a file while it was
        down) is listed on first use and the list cached, so ``mcp:<server>/<tool>`` does
        not resolve to nothing (issue #38 item 9). A failure leaves it unlisted: the entry
        then fails loudly at the toolset."""
        try:
            tools = await discover_tools(server, env)
        except McpUnavailable as exc:
            logger.warning("Could not list the tools of MCP server %r: %s", server.name, exc)
            return server
        await self.source.remember_tools(server.name, tools)
        return server.model_copy(update={"tools": tools})

    async def call(
        self,
        server: str,
        name: str,
        args: dict[str, Any],
        *,
        call_id: str,
        env: EnvLookup,
        thread_id: str | None = None,
        resume: dict[str, Any] | None = None,
        ask: McpAsk | None = None,
    ) -> ToolResult:
        found = await self._server(server)
        if found is None or found.tool(name) is None:
            return failure(f"MCP tool '{server}/{name}' is not available (removed or disabled).")
        bearer = None
        if found.auth == "oauth":
            if self.tokens is None:
                return failure(f"MCP server '{server}' needs OAuth, which is not set up here.")
            try:
                bearer = await self.tokens.access_token(found, thread_id)
            except McpConfigError as exc:
                return failure(str(exc))
        return await self.pool.call(
            found, name, args, call_id=call_id, env=env, bearer=bearer, resume=resume, ask=ask
        )
