"""``/a2a``: every agent as an A2A server, for other agents (docs/api.md, "A2A").

``GET /a2a/<agent>/.well-known/agent-card.json`` is the agent's card; ``POST /a2a/<agent>``
its JSON-RPC endpoint: A2A 1.0's ``SendMessage``, ``SendStreamingMessage``, ``GetTask``,
``ListTasks``, ``CancelTask``, ``SubscribeToTask``, and 0.3's ``message/send``, ``message/stream``,
``tasks/get``, ``tasks/cancel``, ``tasks/resubscribe`` (answered in 0.3's shapes).

An ASGI app in front of Django beside ``/v1``, for ``/v1``'s reasons (a send waits for the
agent's session on the server's loop, not in a view's thread), and as thin: a new task is a
turn of the OpenAI door's orchestration (``orchestration/openai_turns.py``: the agent
offered to the caller now, the thread theirs, usage limits and budgets), a task is read and
decided by ``services/doors/a2a_tasks.py``, and followed by ``a2a_streams.py`` with the
doors' shared wait (``door_support``: live chunks, stored rows as the truth). Both need the API key (the card too:
an agent is offered to people, and a caller who may not use it gets 404 for its card as for
its endpoint). Unlike ``/v1``, a client that goes away does not stop its task: A2A's tasks
outlive their connection (``SubscribeToTask`` follows them again, ``CancelTask`` stops them).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from agents_app.api import a2a_streams as streams
from agents_app.api import a2a_wire as wire
from agents_app.api.a2a_streams import Started
from agents_app.api.door_support import (
    BodyTooLarge,
    Caller,
    ClientGone,
    Frames,
    authenticate,
    host_allowed,
    mounted,
    post_turn,
    read_body,
    request_headers,
    send_json,
    wait_for_disconnect,
)
from agents_app.base.storable_text import find_unstorable
from agents_app.models import Agent
from agents_app.orchestration.openai_turns import turn_open
from agents_app.selectors import agents_for
from agents_app.services.doors import a2a_tasks as tasks
from agents_app.services.doors.a2a_tasks import A2AError
from agents_app.services.doors.openai_compat import OpenAIError, Said, thread_id_of

logger = logging.getLogger("agents_app.api.a2a_v1")

PREFIX = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"
CANCEL_WAIT_SECONDS = 10.0  # how long a cancel waits for the session to reach a safe point

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
db = database_sync_to_async

SEND = {"SendMessage", "message/send"}
STREAM = {"SendStreamingMessage", "message/stream"}
GET = {"GetTask", "tasks/get"}
CANCEL = {"CancelTask", "tasks/cancel"}
SUBSCRIBE = {"SubscribeToTask", "tasks/resubscribe"}
LIST = {"ListTasks", "tasks/list"}
PUSH = {
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
}
EXTENDED_CARD = {"GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"}
LEGACY = {"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"}


# --- the ASGI app -----------------------------------------------------------------------------


async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Serves every ``/a2a`` path; each answer is JSON or an event stream, never HTML."""
    try:
        await _serve(scope, receive, send)
    except A2AError as exc:
        await _json(send, exc.http_status, wire.error(None, exc), _auth_header(exc))
    except ClientGone:
        pass
    except Exception as exc:
        await _json(send, 200, wire.error(None, streams.internal_error(exc, scope)))


def _auth_header(exc: A2AError) -> list[tuple[bytes, bytes]]:
    return [(b"www-authenticate", b"Bearer")] if exc.http_status == 401 else []


async def _serve(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    headers = request_headers(scope)
    if not host_allowed(headers):
        raise A2AError(
            tasks.INVALID_REQUEST, "Invalid Host header (not in ALLOWED_HOSTS)", http_status=400
        )
    name, rest = _split(scope["path"])
    caller = await db(authenticate)(headers.get("authorization", ""))
    if caller is None:
        raise A2AError(
            tasks.NOT_AUTHENTICATED,
            "Send Authorization: Bearer <API key> (create one in the studio, or with POST "
            "/api/api-keys).",
            http_status=401,
        )
    agent = await db(_agent)(caller.user, name) if name else None
    if agent is None or rest not in ("", CARD_PATH):
        raise A2AError(
            tasks.AGENT_NOT_FOUND,
            f"No agent '{name[:200]}' here, or you may not use it (its card is at "
            f"{PREFIX}/<agent>{CARD_PATH}).",
            http_status=404,
        )
    base = _base_url(scope, headers)
    wanted = "GET" if rest == CARD_PATH else "POST"
    if scope.get("method") != wanted:
        raise A2AError(
            tasks.INVALID_REQUEST,
            f"Method not allowed ({scope.get('method')}): use {wanted}",
            http_status=405,
        )
    if rest == CARD_PATH:
        skills = await db(tasks.agent_skills)(agent)
        endpoint = f"{base}{PREFIX}/{agent.name}"
        await _json(send, 200, wire.card(agent, endpoint, [_skill(s, agent) for s in skills]))
        return
    await _rpc(Call(caller, agent, base, receive, send), await _read(receive))


def _split(path: str) -> tuple[str, str]:
    """``/a2a/<agent><rest>`` → (agent, rest)."""
    tail = path.removeprefix(PREFIX).lstrip("/")
    name, slash, rest = tail.partition("/")
    return name, (slash + rest).rstrip("/")


def _agent(user: Any, name: str) -> Agent | None:
    if len(name) > 128 or find_unstorable(name) is not None:
        return None  # no agent has such a name: a 404, never a database error
    return agents_for(user).filter(name=name).select_related("side_a_prompt").first()


def _base_url(scope: dict[str, Any], headers: dict[str, str]) -> str:
    scheme = scope.get("scheme") or "http"
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy and headers.get(proxy[0].removeprefix("HTTP_").replace("_", "-").lower()) == proxy[1]:
        scheme = "https"
    return f"{scheme}://{headers.get('host', 'localhost')}"


def _skill(skill: tasks.Skill, agent: Agent) -> dict[str, Any]:
    return {
        "id": skill.name,
        "name": skill.name,
        "description": skill.description,
        "tags": list(agent.tags or []) or [agent.name],
    }


async def _read(receive: Receive) -> Any:
    try:
        data = await read_body(receive)
    except BodyTooLarge as exc:
        raise A2AError(tasks.INVALID_REQUEST, exc.message, http_status=413) from None
    try:
        body = json.loads(data)
        found = find_unstorable(body)
    except (ValueError, RecursionError):
        raise A2AError(tasks.PARSE_ERROR, "The body is not valid JSON.") from None
    if found is not None:
        raise A2AError(tasks.INVALID_PARAMS, "The body holds text that cannot be stored (NUL).")
    return body


# --- JSON-RPC ---------------------------------------------------------------------------------


class Call:
    """One JSON-RPC request: who, to which agent, and how to answer."""

    def __init__(
        self, caller: Caller, agent: Agent, base: str, receive: Receive, send: Send
    ) -> None:
        self.caller = caller
        self.agent = agent
        self.base = base
        self.receive = receive
        self.send = send
        self.id: Any = None
        self.legacy = False

    def out(self, value: Any) -> Any:
        return wire.v03(value) if self.legacy else value

    async def answer(self, value: Any) -> None:
        await _json(self.send, 200, wire.result(self.id, self.out(value)))


async def _rpc(call: Call, body: Any) -> None:
    if not isinstance(body, dict):
        raise A2AError(tasks.INVALID_REQUEST, "Expected one JSON-RPC request object (no batches).")
    request_id = body.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | type(None)):
        request_id = None
    call.id = request_id
    method = body.get("method")
    try:
        if body.get("jsonrpc") != "2.0":
            raise A2AError(tasks.INVALID_REQUEST, "jsonrpc: must be exactly '2.0'")
        if not isinstance(method, str) or not method:
            raise A2AError(tasks.INVALID_REQUEST, "method: required, a string")
        params = body.get("params", {})
        call.legacy = method in LEGACY
        await _dispatch(call, method, params)
    except A2AError as exc:
        await _json(call.send, exc.http_status, wire.error(request_id, exc))


async def _dispatch(call: Call, method: str, params: Any) -> None:
    if method in SEND:
        await _send(call, wire.parsed(wire.SendParams, params))
    elif method in STREAM:
        await _stream(call, wire.parsed(wire.SendParams, params))
    elif method in GET:
        await _get(call, wire.parsed(wire.TaskParams, params))
    elif method in CANCEL:
        await _cancel(call, wire.parsed(wire.TaskParams, params))
    elif method in SUBSCRIBE:
        await _subscribe(call, wire.parsed(wire.TaskParams, params))
    elif method in LIST:
        await _list(call, wire.parsed(wire.ListParams, params))
    elif method in PUSH:
        raise A2AError(tasks.PUSH_NOT_SUPPORTED, "Push notifications are not supported.")
    elif method in EXTENDED_CARD:
        raise A2AError(
            tasks.EXTENDED_CARD_NOT_CONFIGURED, "This agent has no extended card: its card is all."
        )
    else:
        raise A2AError(
            tasks.METHOD_NOT_FOUND,
            f"Method not found: {method[:100]} (docs/api.md, 'A2A', lists the methods)",
        )


# --- methods ----------------------------------------------------------------------------------


async def _send(call: Call, params: wire.SendParams) -> None:
    sent = wire.sent_of(params)
    frames = Frames(get_channel_layer())
    gone = asyncio.ensure_future(wait_for_disconnect(call.receive))
    try:
        started = await _start(call, params, sent, frames)
        config = params.configuration
        if not (config.return_immediately or config.blocking is False):
            await streams.follow_task(call.agent.name, started, frames, gone, None)
        view = await db(tasks.task_view)(started.task_id)
        await call.answer({"task": wire.task(view, call.base, config.history_length)})
    except ClientGone:
        pass  # the task goes on: tasks/get or a resubscribe finds it
    finally:
        gone.cancel()
        await frames.leave()


async def _start(call: Call, params: wire.SendParams, sent: wire.Sent, frames: Frames) -> Started:
    """Start the message's task, or resume the one it answers."""
    message = params.message
    if message.task_id:
        session = await db(tasks.task_of)(
            message.task_id, call.caller.user, call.agent.name, action="change"
        )
        if message.context_id and message.context_id != str(session.thread_id):
            raise tasks.invalid_params("message.contextId: not the context of message.taskId")
        data = sent.data[0] if len(sent.data) == 1 and isinstance(sent.data[0], dict) else None
        answer = tasks.answer_of(sent.text, data)
        await frames.join(str(session.thread_id))
        await db(tasks.task_answer)(session, call.caller.user, answer)
        return Started.of(session)
    if not sent.text.strip() and not sent.files:
        raise tasks.invalid_params("message.parts: text or a file is required")
    try:
        thread_id = thread_id_of(message.context_id)
        ask = streams.ask_of(call.agent.name, thread_id, Said("user", sent.text, sent.files))
        opened = await db(turn_open)(
            user=call.caller.user, api_key_id=call.caller.api_key_id, ask=ask
        )
        await frames.join(opened.thread_id)
        turn = await post_turn(opened, call.caller)
    except OpenAIError as exc:
        if exc.param == "X-Thread-Id":
            raise tasks.invalid_params(
                "message.contextId: not a context id of this server"
            ) from None
        raise tasks.from_openai(exc) from exc
    session = await db(tasks.task_session)(turn.thread_id, turn.question_id)
    return Started(str(session.pk), turn.thread_id, turn.question_id)


async def _get(call: Call, params: wire.TaskParams) -> None:
    session = await db(tasks.task_of)(params.id, call.caller.user, call.agent.name)
    view = await db(tasks.task_view)(str(session.pk))
    await call.answer(wire.task(view, call.base, params.history_length))


async def _list(call: Call, params: wire.ListParams) -> None:
    size = tasks.DEFAULT_PAGE if params.page_size is None else params.page_size
    if not 1 <= size <= tasks.MAX_PAGE:
        raise tasks.invalid_params(f"pageSize: 1 to {tasks.MAX_PAGE}")
    token = params.page_token or "0"
    if not token.isdigit():
        raise tasks.invalid_params("pageToken: not a page token of this server")
    page = await db(tasks.task_list)(
        call.caller.user,
        call.agent.name,
        context_id=params.context_id or None,
        state=wire.state_of(params.status) if params.status else None,
        after=params.status_timestamp_after,
        size=size,
        offset=int(token),
    )
    await call.answer(
        wire.tasks_page(
            page.views,
            call.base,
            history_length=params.history_length,
            include_artifacts=params.include_artifacts,
            size=size,
            total=page.total,
            next_offset=page.next_offset,
        )
    )


async def _cancel(call: Call, params: wire.TaskParams) -> None:
    session = await db(tasks.task_of)(params.id, call.caller.user, call.agent.name, action="change")
    await db(tasks.task_cancel)(session, call.caller.user)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CANCEL_WAIT_SECONDS
    # The session stops at its next safe point: the answer tells the state it reached.
    while loop.time() < deadline and await db(tasks.still_running)(str(session.pk)):
        await asyncio.sleep(0.1)
    view = await db(tasks.task_view)(str(session.pk))
    await call.answer(wire.task(view, call.base, params.history_length))


# --- streams ----------------------------------------------------------------------------------


async def _stream(call: Call, params: wire.SendParams) -> None:
    sent = wire.sent_of(params)
    frames = Frames(get_channel_layer())
    gone = asyncio.ensure_future(wait_for_disconnect(call.receive))
    try:
        # Refusals come before the stream, as one JSON-RPC error.
        started = await _start(call, params, sent, frames)
        await _streamed(call, started, frames, gone)
    finally:
        gone.cancel()
        await frames.leave()


async def _subscribe(call: Call, params: wire.TaskParams) -> None:
    session = await db(tasks.task_of)(params.id, call.caller.user, call.agent.name)
    frames = Frames(get_channel_layer())
    gone = asyncio.ensure_future(wait_for_disconnect(call.receive))
    try:
        await frames.join(str(session.thread_id))  # before the read: no frame falls between
        await _streamed(call, Started.of(session), frames, gone)
    finally:
        gone.cancel()
        await frames.leave()


async def _streamed(
    call: Call, started: Started, frames: Frames, gone: asyncio.Future[None]
) -> None:
    stream = streams.EventStream(call.send, call.id, call.out)
    await streams.streamed(stream, started, call.agent.name, call.base, frames, gone)


# --- answers ----------------------------------------------------------------------------------


async def _json(
    send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send_json(send, status, wire.encode(body), extra)


def with_a2a(django_app: Any, prefix: str = PREFIX) -> Any:
    """``django_app`` with this door in front of it at ``prefix``."""
    return mounted(prefix, app, django_app)
