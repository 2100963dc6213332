"""One connection to an MCP server through the official SDK (``runtime.mcp.client`` pools them).

Only this module imports the SDK (about a second of CPU at import, most of it building its
protocol types): a process that never calls an MCP server (a ``manage.py`` command, a worker
whose agents use none) never pays it; ``runtime.mcp.client`` imports this module on its
first connection.

A ``Connection`` is owned by a background task that holds the SDK's context managers (the
transport and the SDK's ``Client`` must be entered and left in one task); calls from any task
of the same loop go through its client, which negotiates the revision (``server/discover`` at
2026-07-28, else the 2025 ``initialize`` handshake). A call that times out or is stopped is
cancelled through the SDK, which tells the server. A 2025-era server's mid-call question
reaches the call's ``ask`` (``_elicit``, ``_whose``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import StreamableHTTPError, streamable_http_client

from runtime.core import egress
from runtime.mcp.servers import (
    NOBODY_TO_ASK,
    McpAsk,
    McpCallTimeout,
    McpNeedsInput,
    McpServerDefinition,
    McpToolInfo,
    McpUnavailable,
)

logger = logging.getLogger("runtime.mcp.client")  # one name for the operator, as before
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
        # The calls in flight (call id -> who asks their person; ``None``: nobody can) and
        # the questions being asked for each, cancelled when their call ends.
        self._askers: dict[str, McpAsk | None] = {}
        self._asking: dict[str, set[asyncio.Future[dict[str, Any]]]] = {}

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
                # Declares elicitation: 2025-era servers ask mid-call (``_elicit``);
                # 2026-07-28 ones answer ``input_required`` (``call``).
                elicitation_callback=self._elicit,
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
            # A held question (at most an hour, STUDIO_MCP_LIVE_QUESTION_SECONDS) leaves the
            # call's stream silent: the read limit outlasts it; calls keep their own timeout.
            timeout = httpx2.Timeout(30.0, read=max(3600.0, s.timeout_ms / 1000))
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
        ask: McpAsk | None = None,
    ) -> types.CallToolResult:
        """One ``tools/call``; ``McpUnavailable`` when the connection is lost meanwhile,
        ``McpNeedsInput`` when the server asks the person (``resume`` answers it);
        ``ask`` answers a 2025-era server's question in the middle of the call."""
        session = self.session
        if session is None or self.broken.is_set():
            raise McpUnavailable(plain_error(self.error))
        self._askers[call_id] = ask
        try:
            return await self._call(session, tool, args, call_id, timeout, resume)
        finally:
            del self._askers[call_id]
            for asking in self._asking.pop(call_id, set()):
                asking.cancel()

    async def _call(
        self,
        session: Client,
        tool: str,
        args: dict[str, Any],
        call_id: str,
        timeout: float,
        resume: dict[str, Any] | None,
    ) -> types.CallToolResult:
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
            while True:
                done, _ = await asyncio.wait(
                    {request, lost}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                # The server's time limit does not count the time its question waits for
                # the person (their own limit bounds that): the call gets a new one.
                if done or not self._asking.get(call_id):
                    break
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
        raise McpCallTimeout()

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

    async def _elicit(self, context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        """A 2025-era server's ``elicitation/create`` while a call is open: the call's ``ask``
        puts it to the person and the answer goes back, the call held meanwhile."""
        if getattr(params, "mode", "form") != "form":
            return _refused(
                "This client cannot send the person to a URL (URL-mode elicitation); "
                "only questions with a form can be answered."
            )
        call_id, refusal = self._whose(getattr(context, "meta", None))
        if call_id is None:
            return _refused(refusal)
        ask = self._askers.get(call_id)
        if ask is None:
            return _refused(NOBODY_TO_ASK)
        question = {
            "key": "elicitation",
            "mode": "form",
            "message": params.message,
            "schema": getattr(params, "requested_schema", None) or {},
            "url": None,
        }
        asking = asyncio.ensure_future(ask(question))
        self._asking.setdefault(call_id, set()).add(asking)
        try:
            answer = await asking
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the SDK's own task is going away
            return _refused("The tool call ended before the person answered.")
        except Exception:  # a store failure: the server hears no, the call goes on
            logger.warning("Could not ask the person the MCP server's question", exc_info=True)
            return _refused("The question could not be put to the person.")
        finally:
            self._asking.get(call_id, set()).discard(asking)
        action = answer.get("action")
        if action == "accept":
            return types.ElicitResult(action="accept", content=answer.get("content") or {})
        return types.ElicitResult(action="decline" if action == "decline" else "cancel")

    def _whose(self, meta: Any) -> tuple[str | None, str]:
        """The in-flight call a mid-call question belongs to: the only one, else the one its
        ``_meta.callId`` names; never a guess (another call's person must not be asked)."""
        if len(self._askers) == 1:
            return next(iter(self._askers)), ""
        named = meta.get("callId") if isinstance(meta, dict) else None
        if isinstance(named, str) and named in self._askers:
            return named, ""
        if not self._askers:
            return None, "No tool call is in flight on this connection to ask about."
        return None, (
            "Several tool calls are in flight on this connection and the question does not "
            "say which one it belongs to (_meta.callId), so it cannot tell whose person to ask; "
            "nobody was asked."
        )


def _refused(words: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=words)


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


async def list_tools_once(
    server: McpServerDefinition, headers: dict[str, str], env: dict[str, str], min_connect: float
) -> list[McpToolInfo]:
    """Connect afresh, list every tool, close. ``McpUnavailable`` says why it failed."""
    conn = Connection(server, headers, env)
    timeout = server.timeout_ms / 1000
    try:
        await conn.open(max(min_connect, timeout))
        return await asyncio.wait_for(conn.list_tools(timeout), timeout)
    except TimeoutError:
        raise McpUnavailable(f"the tool list did not arrive within {timeout:g} s") from None
    except MCPError as exc:
        raise McpUnavailable(exc.error.message) from None
    finally:
        await conn.close()
