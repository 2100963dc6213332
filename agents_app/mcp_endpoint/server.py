"""``/mcp``: the agents exposed as tools, served to MCP clients over streamable HTTP.

A thin adapter over ``agents_app.orchestration.agent_calls``: the ASGI app authenticates every
request with an API key (as the thread API does) or an OAuth access token of the platform's
authorization server (``services.access.oauth_server``; 401 JSON with a ``WWW-Authenticate``
naming the protected-resource metadata otherwise, RFC 9728 §5.1), then hands
it to the SDK's ``StreamableHTTPSessionManager`` in stateless mode (no MCP session
lives between requests, so any web process can answer any request). The SDK serves both
eras of the protocol there: a 2026-07-28 request (its ``MCP-Protocol-Version`` header, no
``initialize``) and the 2025 revisions' ``initialize`` handshake. A tool call
posts the message through the thread API's services, then waits for the session
while sending progress notifications, and returns the final text and the thread id.

It runs in front of Django, so it applies the API's gates itself, before the SDK sees
the request: ``ALLOWED_HOSTS`` on the ``Host`` header and a same-site ``Origin``
(``agents_app.mcp_endpoint.hosts``, 400 and 403), POST only (405: being stateless, there is no
session for a ``GET`` event stream to serve, and an idle one would be held open
forever), the API's body size (413) and text rules (NUL, lone surrogates, the message
size: a JSON-RPC ``-32602`` error, nothing created), and the API's usage limits and
spend budgets for thread creation and posts (a tool error naming the limit).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import jsonschema
from channels.db import database_sync_to_async
from django.conf import settings
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agents_app.base.errors import DomainError
from agents_app.base.storable_text import describe_unstorable, find_unstorable
from agents_app.mcp_endpoint.hosts import host_allowed, origin_allowed, request_host, scope_headers
from agents_app.models import Thread
from agents_app.orchestration.agent_calls import Ask, agent_ask, ask_progress, exposed_agents
from agents_app.selectors import access_thread, agents_for
from agents_app.services.access import limits
from agents_app.services.access.api_keys import api_key_in_use
from agents_app.services.access.oauth_server import SCOPE, oauth_token_in_use
from agents_app.services.sessions.lifecycle import thread_stop
from agents_app.services.threads.messages import CONTENT_MAX

logger = logging.getLogger("agents_app.mcp_endpoint.server")
USER_KEY = "studio.user"
API_KEY_ID = "studio.api_key_id"
THREAD_ID_MAX = 128  # the thread API's agent and thread ids are at most this long
INVALID_PARAMS = -32602  # JSON-RPC
POLL_SECONDS = 0.3
HEARTBEAT_SECONDS = 3.0
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "maxLength": CONTENT_MAX,
            "description": "What to ask the agent.",
        },
        "thread_id": {
            "type": "string",
            "maxLength": THREAD_ID_MAX,
            "description": "Continue this thread (from an earlier answer); omit for a new one.",
        },
    },
    "required": ["message"],
}

Context = ServerRequestContext[Any, Any]


def _scope(ctx: Context) -> dict[str, Any]:
    """The ASGI scope ``McpApp`` authenticated (the SDK passes its Starlette request on)."""
    assert ctx.request is not None, "/mcp is served over HTTP only"
    return ctx.request.scope  # type: ignore[no-any-return]


def _user(ctx: Context) -> Any:
    return _scope(ctx)[USER_KEY]


def _api_key_id(ctx: Context) -> int | None:
    return _scope(ctx).get(API_KEY_ID)


async def list_tools(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    agents = await database_sync_to_async(exposed_agents)(_user(ctx))
    tools = [
        types.Tool(
            name=a.name,
            title=a.title or None,
            description=a.tool_description or f"Ask the {a.title or a.name} agent.",
            input_schema=INPUT_SCHEMA,
        )
        for a in agents
    ]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    # The SDK 2.x's low-level server no longer checks arguments against the input schema.
    invalid = _invalid_arguments(arguments)
    if invalid is not None:
        return _error(f"Input validation error: {invalid}")
    return await ask_agent(ctx, params.name, arguments)


async def ask_agent(ctx: Context, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    user = _user(ctx)
    report = _progress_sender(ctx)
    try:
        # Shielded: the session can start, and its client give up, before the post returns;
        # a cancellation waits for the post so that the session it made is stopped below.
        with anyio.CancelScope(shield=True):
            ask = await database_sync_to_async(_limited_ask)(
                user=user,
                api_key_id=_api_key_id(ctx),
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
        structured_content={"answer": progress.answer, "thread_id": ask.thread_id},
    )


def _invalid_arguments(arguments: dict[str, Any]) -> str | None:
    try:
        jsonschema.validate(arguments, INPUT_SCHEMA)
    except jsonschema.ValidationError as exc:
        return exc.message
    return None


server: Server[Any] = Server(
    "standard-agents-studio", on_list_tools=list_tools, on_call_tool=call_tool
)


def _limited_ask(
    *, user: Any, api_key_id: int | None, agent_name: str, message: str, thread_id: str | None
) -> Ask:
    """``agent_ask`` behind the thread API's limits: ``thread_create`` and ``message_post``
    counted as ``@limited`` counts them (given back if the call fails), and a new thread's
    spend budgets checked before it is created (``message_post`` checks them again)."""
    taken: list[limits.Hit] = []
    try:
        if thread_id is None:
            taken.append(limits.action_hit("thread_create", user=user, api_key_id=api_key_id))
        taken.append(limits.action_hit("message_post", user=user, api_key_id=api_key_id))
        if thread_id is None:
            agent = agents_for(user).filter(name=agent_name, expose_as_tool=True).first()
            if agent is not None:
                limits.budget_check(Thread(owner=user, agent=agent))
        return agent_ask(user=user, agent_name=agent_name, message=message, thread_id=thread_id)
    except BaseException:
        for hit in taken:
            hit.refund()
        raise


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


def _progress_sender(ctx: Context) -> Report:
    async def report(count: int, message: str) -> None:
        # A no-op when the client asked for no progress (no progress token).
        await ctx.session.report_progress(float(count), None, message)

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
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _ensure_running(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        if self._started is None or self._loop is not loop:
            # A server has one loop for its life; a process that serves on a new loop (the
            # tests' live servers, one per module) needs a manager running on that loop.
            self._loop, self._started = loop, asyncio.Event()
            self.manager = StreamableHTTPSessionManager(app=server, stateless=True)
            loop.create_task(self._hold(self.manager, self._started))
        await self._started.wait()
        assert self.manager is not None
        return self.manager

    async def _hold(self, manager: StreamableHTTPSessionManager, started: asyncio.Event) -> None:
        async with manager.run():
            started.set()
            await asyncio.Event().wait()  # for the life of the loop

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        refusal = _gate(scope)
        if refusal is not None:
            await _json(send, *refusal)
            return
        caller = await database_sync_to_async(_authenticate)(scope)
        if caller is None:
            body = {"error": "Unauthorized: send Authorization: Bearer <API key or OAuth token>"}
            await _json(send, 401, body, [(b"www-authenticate", _challenge(scope))])
            return
        data = await _body(receive)
        if data is None:
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            await _json(send, 413, {"error": f"Request body too large (over {limit} bytes)"})
            return
        invalid = _invalid_params(data)
        if invalid is not None:
            await _json(send, *invalid)
            return
        manager = await self._ensure_running()
        scope = {**scope, USER_KEY: caller[0], API_KEY_ID: caller[1]}
        await manager.handle_request(scope, _replay(data, receive), send)


Answer = tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]


def _gate(scope: Any) -> Answer | None:
    """The API's host and origin rules, and POST only (module docstring)."""
    headers = scope_headers(scope)
    host = request_host(headers)
    if not host_allowed(host):
        return 400, {"error": "Invalid Host header (not in ALLOWED_HOSTS)"}, []
    if not origin_allowed(headers.get("origin"), host):
        return 403, {"error": "Forbidden: cross-site Origin"}, []
    if scope.get("method") != "POST":
        body = {"error": "Method not allowed: /mcp is stateless; send JSON-RPC with POST"}
        return 405, body, [(b"allow", b"POST")]
    return None


def _authenticate(scope: Any) -> tuple[Any, int | None] | None:
    """The user (and API key id) of the ``Authorization: Bearer`` header: an unrevoked API key,
    or an unrevoked, unexpired OAuth access token with the ``mcp`` scope."""
    raw = _bearer(scope)
    if raw is None:
        return None
    key = api_key_in_use(raw)
    if key is not None:
        return key.user, key.pk
    token = oauth_token_in_use(raw)
    return (token.user, None) if token is not None else None


def _bearer(scope: Any) -> str | None:
    text = scope_headers(scope).get("authorization", "")
    return text[7:].strip() if text[:7].lower() == "bearer " else None


def _challenge(scope: Any) -> bytes:
    """``WWW-Authenticate`` for a 401: where the protected-resource metadata is (RFC 9728
    §5.1) and the scope to ask for; ``invalid_token`` when a token was sent (RFC 6750 §3.1)."""
    metadata = f"{_origin(scope)}/.well-known/oauth-protected-resource/mcp"
    value = f'Bearer resource_metadata="{metadata}", scope="{SCOPE}"'
    if _bearer(scope):
        value += ', error="invalid_token"'
    return value.encode("latin1")


def _origin(scope: Any) -> str:
    """The site's origin as Django would build it (``STUDIO_PUBLIC_URL`` when set)."""
    if settings.STUDIO_PUBLIC_URL:
        return str(settings.STUDIO_PUBLIC_URL).rstrip("/")
    headers = scope_headers(scope)
    scheme = scope.get("scheme", "http")
    proxied = settings.SECURE_PROXY_SSL_HEADER
    if proxied and headers.get(proxied[0][5:].lower().replace("_", "-")) == proxied[1]:
        scheme = "https"
    return f"{scheme}://{request_host(headers)}"


async def _body(receive: Any) -> bytes | None:
    """The request body, or ``None`` past the API's ``DATA_UPLOAD_MAX_MEMORY_SIZE``."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: the SDK reads the disconnect again
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(data: bytes, receive: Any) -> Any:
    """``receive`` for the SDK: the body read here, then the connection's own messages."""
    pending = [{"type": "http.request", "body": data, "more_body": False}]

    async def replay() -> Any:
        return pending.pop() if pending else await receive()

    return replay


def _invalid_params(data: bytes) -> Answer | None:
    """A JSON-RPC error for text the API would refuse; malformed JSON is the SDK's to answer."""
    try:
        message = json.loads(data)
    except ValueError:
        return None
    for request in message if isinstance(message, list) else [message]:
        if not isinstance(request, dict):
            continue
        problem = _problem(request)
        if problem is not None:
            error = {"code": INVALID_PARAMS, "message": problem}
            body = {"jsonrpc": "2.0", "id": request.get("id"), "error": error}
            return (200 if "id" in request else 400), body, []
    return None


def _problem(request: dict[str, Any]) -> str | None:
    found = find_unstorable(request)
    if found is not None:
        return describe_unstorable(found)
    params = request.get("params")
    if request.get("method") != "tools/call" or not isinstance(params, dict):
        return None
    arguments = params.get("arguments")
    if not isinstance(arguments, dict):
        return None
    message, thread_id = arguments.get("message"), arguments.get("thread_id")
    if isinstance(message, str) and len(message) > CONTENT_MAX:
        return f"Invalid request: params.arguments.message: at most {CONTENT_MAX} characters"
    if isinstance(thread_id, str) and len(thread_id) > THREAD_ID_MAX:
        return f"Invalid request: params.arguments.thread_id: at most {THREAD_ID_MAX} characters"
    return None


async def _json(
    send: Any, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
