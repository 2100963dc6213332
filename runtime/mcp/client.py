"""Calling MCP servers with the official SDK: one reused connection per server and event loop.

A ``Connection`` is owned by a background task that holds the SDK's context managers
(the transport and the SDK's ``Client`` must be entered and left in one task); calls from
any task of the same loop go through its client. The client negotiates the protocol
revision (``mode="auto"``: ``server/discover`` at 2026-07-28, the ``initialize`` handshake
of the 2025 revisions when the server does not answer it). A connection is
"broken" when its task ended, the transport reported an error, or the server
answered "connection closed" / "session terminated": the call then reopens it
once and tries again (the call id travels in ``_meta.callId`` so a server can
recognise the retry), and a second loss fails the call with a plain sentence.

A call that times out, or whose session is stopped (the task is cancelled), is cancelled
through the SDK, which tells the server (``notifications/cancelled`` on a 2025-era
connection; a 2026-07-28 request's response stream is closed) so it can stop working on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import StreamableHTTPError, streamable_http_client

from runtime.core import egress
from runtime.core.results import ToolResult, failure
from runtime.mcp.servers import (
    EnvLookup,
    McpConfigError,
    McpNeedsInput,
    McpServer,
    McpServerDefinition,
    McpToolInfo,
    resolve_values,
    result_from_content,
)

logger = logging.getLogger("runtime.mcp.client")
# Errors the SDK sends a pending request when its connection went away.
_LOST = (types.CONNECTION_CLOSED, 32600, -32600)
_LOST_TEXT = ("connection closed", "session terminated")
# What a transport reports when it can no longer carry requests (other exceptions the
# SDK hands the message handler, e.g. a late answer to a cancelled request, are noise).
_TRANSPORT_ERRORS = (
    httpx2.HTTPError,
    OSError,
    StreamableHTTPError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)
# The SDK's transports log whole protocol messages (tool results, which may echo a
# header secret) at DEBUG/INFO from tasks shared by every thread, where no thread's
# redactor applies: only their warnings and errors pass.
_QUIET_LOGGERS = (
    "mcp.client.streamable_http",
    "mcp.client.stdio",
    "mcp.shared.jsonrpc_dispatcher",
    "client",
)


class _WarningsOnly(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING


for _name in _QUIET_LOGGERS:
    logging.getLogger(_name).addFilter(_WarningsOnly())

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


class McpUnavailable(Exception):
    """The server cannot be reached or its connection was lost (plain words in ``str``)."""


class _CallTimeout(Exception):
    pass


# --- one connection -------------------------------------------------------------------------


class Connection:
    """An open MCP client session, held by its own task until ``close``."""

    def __init__(
        self, server: McpServerDefinition, headers: dict[str, str], env: dict[str, str]
    ) -> None:
        self.server, self.headers, self.env = server, headers, env
        self.session: Client | None = None
        self.error: BaseException | None = None
        self.broken = asyncio.Event()
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self, timeout: float) -> None:
        """Connect and initialize; ``McpUnavailable`` in plain words when that fails."""
        self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            await self.close()
            raise McpUnavailable(f"no answer within {timeout:g} s") from None
        if self.session is None:
            raise McpUnavailable(plain_error(self.error))

    async def _run(self) -> None:
        try:
            # No response cache: a tool list is read afresh when the studio asks for it.
            client = Client(
                self._transport(),
                message_handler=self._on_message,
                cache=None,
                # Declares elicitation; questions reach the person through ``call`` on
                # 2026-07-28 connections (``input_required``), see ``_live_question``.
                elicitation_callback=_live_question,
            )
            async with client as session:
                self.session = session
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - kept for the caller, in plain words
            self.error = exc
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.broken.set()
            self._ready.set()

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        s = self.server
        if s.transport == "http":
            timeout = httpx2.Timeout(30.0, read=max(300.0, s.timeout_ms / 1000))
            async with (
                # The egress policy checks the server's address (docs/security.md).
                egress.client_httpx2(headers=self.headers or None, timeout=timeout) as client,
                streamable_http_client(s.url, http_client=client) as streams,
            ):
                yield streams
            return
        params = StdioServerParameters(
            command=s.command, args=list(s.args), env={**get_default_environment(), **self.env}
        )
        # The child's stderr is not ours to log: it may print the secrets it was given.
        async with stdio_client(params, errlog=_devnull()) as streams:
            yield streams

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, _TRANSPORT_ERRORS):
            # A transport error (the POST failed, the stream broke): the request it
            # belonged to will never be answered, so every waiting call retries.
            self.error = message
            self.broken.set()

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        call_id: str,
        timeout: float,
        resume: dict[str, Any] | None = None,
    ) -> types.CallToolResult:
        """One ``tools/call``; ``McpUnavailable`` when the connection is lost meanwhile,
        ``McpNeedsInput`` when the server asks the person (``resume`` answers it)."""
        session = self.session
        if session is None or self.broken.is_set():
            raise McpUnavailable(plain_error(self.error))
        meta = types.RequestParamsMeta(callId=call_id)  # type: ignore[typeddict-unknown-key]
        responses, state = _answers(resume)
        request = asyncio.ensure_future(
            session.session.call_tool(
                tool,
                args,
                meta=meta,
                allow_input_required=True,
                input_responses=responses,
                request_state=state,
            )
        )
        lost = asyncio.ensure_future(self.broken.wait())
        try:
            done, _ = await asyncio.wait(
                {request, lost}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            # Cancelling the SDK's request tells the server (module docstring).
            await _cancelled(request)
            raise
        finally:
            lost.cancel()
        if request in done:
            try:
                answer = request.result()
                if isinstance(answer, types.InputRequiredResult):
                    raise McpNeedsInput(_questions(answer))
                assert isinstance(answer, types.CallToolResult)
                return answer
            except MCPError as exc:
                if _is_lost(exc):
                    self.broken.set()
                    raise McpUnavailable(exc.error.message) from None
                raise
        await _cancelled(request)
        if lost in done:
            raise McpUnavailable(plain_error(self.error))
        raise _CallTimeout()

    async def list_tools(self, timeout: float) -> list[McpToolInfo]:
        assert self.session is not None
        tools: list[McpToolInfo] = []
        cursor: str | None = None
        while True:
            page = await self.session.list_tools(cursor=cursor)
            tools += [
                McpToolInfo(
                    name=t.name, description=t.description or "", input_schema=t.input_schema
                )
                for t in page.tools
            ]
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def close(self) -> None:
        """Leave the SDK's contexts in their own task (stdio: the process is stopped)."""
        self._closing.set()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 10)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()


async def _live_question(context: Any, params: Any) -> types.ErrorData:
    """A 2025-era server's mid-call ``elicitation/create``: a worker cannot hold a call open
    until a person answers, so it is refused in words (2026-07-28 servers ask durably)."""
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message="This client asks the person only through input_required (MCP 2026-07-28).",
    )


def _questions(result: types.InputRequiredResult) -> dict[str, Any]:
    """What the person must answer, as stored on the waiting call (JSON)."""
    questions = []
    for key, request in (result.input_requests or {}).items():
        params = getattr(request, "params", None)
        if getattr(request, "method", "") != "elicitation/create" or params is None:
            questions.append({"key": key, "unsupported": getattr(request, "method", "?")})
            continue
        questions.append(
            {
                "key": key,
                "mode": getattr(params, "mode", "form"),
                "message": params.message,
                "schema": getattr(params, "requested_schema", None) or {},
                "url": getattr(params, "url", None),
            }
        )
    return {"questions": questions, "request_state": result.request_state}


def _answers(resume: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """The SDK's ``input_responses`` and ``request_state`` from a stored answer."""
    if not resume:
        return None, None
    answer = resume.get("answer") or {}
    action = answer.get("action") if answer.get("action") in ("accept", "decline") else "cancel"
    content = answer.get("content") if action == "accept" else None
    responses: dict[str, Any] = {
        q["key"]: types.ElicitResult(action=action, content=content)
        for q in resume.get("questions") or []
    }
    return responses or None, resume.get("request_state")


def _is_lost(exc: MCPError) -> bool:
    return exc.error.code in _LOST or exc.error.message.lower() in _LOST_TEXT


async def _cancelled(request: asyncio.Future[Any]) -> None:
    """Cancel the SDK's request and let its cancellation reach the server (bounded)."""
    request.cancel()
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(request), 5)


_devnull_file: Any = None


def _devnull() -> Any:
    global _devnull_file
    if _devnull_file is None:
        _devnull_file = open(os.devnull, "w")  # noqa: SIM115 - shared for the process
    return _devnull_file


def plain_error(exc: BaseException | None) -> str:
    """What went wrong, in words an operator can act on (the innermost cause of a group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if exc is None:
        return "the connection was closed"
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "status_code", None):
        return f"the server answered HTTP {response.status_code} {response.reason_phrase}".strip()
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    if isinstance(exc, MCPError):
        return exc.error.message
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


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
    ) -> ToolResult:
        """Run ``tool``; every failure is an error result with a sentence the model can use.
        ``bearer``: the person's OAuth access token (``auth: oauth`` servers)."""
        label = f"MCP tool '{server.name}/{tool}'"
        try:
            headers, child_env = await resolved(server, env)
        except McpConfigError as exc:
            return failure(f"{label} cannot be called: {exc}")
        if bearer is not None:
            headers = {**headers, "Authorization": f"Bearer {bearer}"}
        timeout = server.timeout_ms / 1000
        for attempt in (1, 2):
            try:
                conn = await self._connection(server, headers, child_env)
            except McpUnavailable as exc:
                return failure(
                    f"Could not connect to MCP server '{server.name}': {str(exc).rstrip('.')}."
                )
            try:
                raw = await conn.call(tool, args, call_id, timeout, resume)
            except McpUnavailable as exc:
                await self._discard(server, conn)
                if attempt == 2:
                    return failure(
                        f"The connection to MCP server '{server.name}' was lost again after "
                        f"reopening it ({exc}); the call did not complete."
                    )
                continue
            except _CallTimeout:
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
    conn = Connection(server, headers, child_env)
    timeout = server.timeout_ms / 1000
    try:
        await conn.open(max(MIN_CONNECT_SECONDS, timeout))
        return await asyncio.wait_for(conn.list_tools(timeout), timeout)
    except TimeoutError:
        raise McpUnavailable(f"the tool list did not arrive within {timeout:g} s") from None
    except MCPError as exc:
        raise McpUnavailable(exc.error.message) from None
    finally:
        await conn.close()


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
            found, name, args, call_id=call_id, env=env, bearer=bearer, resume=resume
        )
