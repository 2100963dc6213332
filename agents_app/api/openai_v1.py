"""``/v1``: every agent as an OpenAI model, for OpenAI's client libraries (docs/api.md,
"OpenAI-compatible API").

``GET /v1/models``, ``GET /v1/models/{name}``, ``POST /v1/chat/completions`` and
``POST /v1/responses``, as an ASGI app in front of Django, the way ``/mcp`` is mounted
(``studio/asgi.py``), and for the same reason: a turn waits for the agent's session, seconds
to minutes. A Django view would hold one of the process's few view permits
(``web/view_gate.py``) and a request thread all that time, and could not choose its status
after the wait; here the wait is a coroutine on the server's loop. The app applies the API's
gates itself: ``ALLOWED_HOSTS``, the API key (``Authorization: Bearer``, the thread API's
keys and login tokens, with its per-key limits), the body size, storable text.

Thin: the request becomes an ``Ask`` (``services/doors/openai_compat.py``), the turn is opened and
posted (``orchestration/openai_turns.py``), and this module waits. It joins the thread's
live frames before the post, relays the reply's chunks as they stream, and reads the stored
rows when a reply or the session ends (and every ``POLL_SECONDS`` besides): frames the
channel layer dropped only delay text, they never lose it. Every wait is bounded
(``STUDIO_OPENAI_WAIT_SECONDS``); a client that goes away stops the session it started.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from agents_app.api import openai_wire as wire
from agents_app.base.overload import overload_reason, retry_after
from agents_app.base.storable_text import describe_unstorable, find_unstorable
from agents_app.broadcast.events import thread_group
from agents_app.broadcast.listening import keep_listening
from agents_app.broadcast.live_frames import THREAD_FRAME, THREAD_FRAMES, frame_of, meta_of
from agents_app.orchestration.openai_turns import Opened, Turn, turn_open, turn_post, turn_stop
from agents_app.selectors import agents_for
from agents_app.services.access.api_keys import api_key_in_use
from agents_app.services.access.login_tokens import TOKEN_PREFIX, login_token_user
from agents_app.services.doors.openai_compat import (
    THREAD_HEADER,
    Ask,
    OpenAIError,
    Reply,
    TurnState,
    chat_ask,
    responses_ask,
    turn_state,
    turn_usage,
)
from agents_app.services.env.redaction import Redactor, thread_redactor

logger = logging.getLogger("agents_app.api.openai_v1")

PREFIX = "/v1"
POLL_SECONDS = 1.0  # stored rows read at least this often while a turn runs
SETTLE_SECONDS = 0.1  # ... and this often once the session said it stopped
HEARTBEAT_SECONDS = 15.0  # an SSE comment: proxies keep the stream, a gone client shows
_DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]
MODEL_NAME_MAX = 128  # Agent.name

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
db = database_sync_to_async


@dataclass(frozen=True)
class Caller:
    user: Any
    api_key_id: int | None


class ClientGone(Exception):
    """The client closed the connection."""


# --- the ASGI app -----------------------------------------------------------------------------


async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Serves every ``/v1`` path; each answer is JSON or an event stream, never HTML."""
    try:
        await _serve(scope, receive, send)
    except OpenAIError as exc:
        await _error(send, exc)
    except ClientGone:
        pass  # went away before its request was read whole: nobody to answer
    except Exception as exc:
        reason = overload_reason(exc)
        if reason is not None:
            logger.warning("503 for %s %s: %s", scope.get("method"), scope.get("path"), exc)
            error = OpenAIError(
                503, f"{reason}; retry in {retry_after()} seconds.", type="server_error"
            )
            error.retry_after = int(retry_after())
            await _error(send, error)
            return
        logger.exception("Unhandled error in %s %s", scope.get("method"), scope.get("path"))
        await _error(send, OpenAIError(500, "Internal error", type="server_error"))


async def _serve(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    headers = _headers(scope)
    if not _host_allowed(headers):
        raise OpenAIError(400, "Invalid Host header (not in ALLOWED_HOSTS)")
    method, path = scope.get("method", ""), scope["path"].rstrip("/")
    route = _route(method, path)
    caller = await db(_authenticate)(headers.get("authorization", ""))
    if caller is None:
        raise OpenAIError(
            401,
            "Incorrect API key provided: send Authorization: Bearer <API key> (create one in "
            "the studio, or with POST /api/api-keys).",
            code="invalid_api_key",
        )
    if route == "models":
        agents = await db(lambda: list(agents_for(caller.user).order_by("name")))()
        await _json(send, 200, wire.models(agents))
        return
    if route.startswith("models/"):
        name = route.removeprefix("models/")
        # A name no agent can have (NUL, too long) is not looked up: the database would
        # refuse the text, and a client's typo is a 404, never a 500.
        agent = (
            await db(lambda: agents_for(caller.user).filter(name=name).first())()
            if len(name) <= MODEL_NAME_MAX and find_unstorable(name) is None
            else None
        )
        if agent is None:
            raise OpenAIError(
                404,
                f"The model '{name[:200]}' does not exist or you do not have access to it.",
                param="model",
                code="model_not_found",
            )
        await _json(send, 200, wire.model(agent))
        return
    body = _parsed(await _body(receive))
    thread_header = headers.get(THREAD_HEADER.lower())
    ask = (
        chat_ask(body, thread_header=thread_header)
        if route == "chat/completions"
        else responses_ask(body, thread_header=thread_header)
    )
    await _turn(ask, caller, receive, send)


def _route(method: str, path: str) -> str:
    """The route of ``path`` under ``/v1``; OpenAI's 404 / 405 otherwise."""
    route = path.removeprefix(PREFIX + "/") if path.startswith(PREFIX + "/") else ""
    wanted = "GET" if route == "models" or route.startswith("models/") else "POST"
    if route not in ("models", "chat/completions", "responses") and not (
        route.startswith("models/") and "/" not in route.removeprefix("models/")
    ):
        raise OpenAIError(404, f"Invalid URL ({method} {path or '/'})", code="unknown_url")
    if method != wanted:
        raise _MethodNotAllowed(wanted, f"Method not allowed ({method} {path}): use {wanted}")
    return route


class _MethodNotAllowed(OpenAIError):
    def __init__(self, allow: str, message: str) -> None:
        super().__init__(405, message, code="method_not_allowed")
        self.allow = allow


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {k.decode("latin1").lower(): v.decode("latin1") for k, v in scope.get("headers") or []}


def _host_allowed(headers: dict[str, str]) -> bool:
    """``ALLOWED_HOSTS`` as Django applies it (this app runs before Django sees a request)."""
    host = headers.get("host", "")
    if settings.USE_X_FORWARDED_HOST and headers.get("x-forwarded-host"):
        host = headers["x-forwarded-host"].split(",")[0].strip()
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = _DEBUG_HOSTS
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def _authenticate(authorization: str) -> Caller | None:
    """The thread API's bearer credentials: an API key (its per-key limits apply) or a
    login token, of an active user."""
    if authorization[:7].lower() != "bearer ":
        return None
    token = authorization[7:].strip()
    if token.startswith(TOKEN_PREFIX):
        user = login_token_user(token)
        return Caller(user, None) if user is not None else None
    key = api_key_in_use(token)
    return Caller(key.user, key.pk) if key is not None else None


async def _body(receive: Receive) -> bytes:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise OpenAIError(
                413, f"Request body too large (over {limit} bytes)", code="request_too_large"
            )
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _parsed(data: bytes) -> Any:
    try:
        body = json.loads(data)
        found = find_unstorable(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
        raise OpenAIError(
            400,
            "We could not parse the JSON body of your request (expected a JSON object).",
        ) from None
    if found is not None:
        raise OpenAIError(400, describe_unstorable(found), param=found[0] or None)
    return body


# --- a turn -----------------------------------------------------------------------------------


async def _turn(ask: Ask, caller: Caller, receive: Receive, send: Send) -> None:
    opened: Opened = await db(turn_open)(user=caller.user, api_key_id=caller.api_key_id, ask=ask)
    frames = Frames(get_channel_layer())
    try:
        await frames.join(opened.thread_id)
        turn = await _post(opened, caller)
    except BaseException:
        await frames.leave()
        raise
    gone = asyncio.ensure_future(_disconnect(receive))
    try:
        if ask.stream:
            await _streamed(turn, frames, gone, send)
        else:
            await _answered(turn, frames, gone, send)
    except ClientGone:
        await _stop_or_log(turn, caller)
    except asyncio.CancelledError:
        # The server gave up on the request (its client went away): nobody reads the answer.
        await asyncio.shield(_stop_or_log(turn, caller))
        raise
    finally:
        gone.cancel()
        await frames.leave()


async def _post(opened: Opened, caller: Caller) -> Turn:
    # The post runs on to its commit even if this request is cancelled meanwhile; the
    # session it started is then stopped.
    posting = asyncio.ensure_future(db(turn_post)(opened))
    try:
        return await asyncio.shield(posting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await _stop_or_log(await posting, caller)
        raise


async def _stop_or_log(turn: Turn, caller: Caller) -> None:
    try:
        await db(turn_stop)(turn, caller.user)
    except Exception:
        logger.exception(
            "A client went away; could not stop the session of thread %s", turn.thread_id
        )


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _turn_headers(turn: Turn) -> list[tuple[bytes, bytes]]:
    return [(THREAD_HEADER.lower().encode(), turn.thread_id.encode())]


def _timeout(turn: Turn) -> OpenAIError:
    return OpenAIError(
        504,
        f"The agent did not answer within {settings.STUDIO_OPENAI_WAIT_SECONDS} s. It goes on "
        f"in thread {turn.thread_id}; read it there, or continue it ({THREAD_HEADER}) once it "
        "has finished.",
        type="server_error",
        code="timeout",
    )


def _failed(state: TurnState) -> OpenAIError | None:
    if state.failure is None:
        return None
    failure = state.failure
    kind = "server_error" if failure.status >= 500 else "invalid_request_error"
    return OpenAIError(failure.status, failure.message, type=kind, code=failure.code)  # type: ignore[arg-type]


async def _answered(turn: Turn, frames: Frames, gone: asyncio.Future[None], send: Send) -> None:
    state = await _follow(turn, frames, gone, None, None)
    if state is None:
        await _error(send, _timeout(turn), turn)
        return
    error = _failed(state)
    if error is not None:
        await _error(send, error, turn)
        return
    usage = await db(turn_usage)(turn.thread_id, turn.question_id)
    if turn.ask.api == "chat":
        body = wire.chat_completion(turn, state.answer(), usage)
    else:
        output = [
            wire.output_message(r.id, r.text, done=True)
            for r in state.replies
            if r.completed and r.text
        ]
        body = wire.response(turn, status="completed", output=output, usage=usage)
    await _json(send, 200, body, _turn_headers(turn))


async def _streamed(turn: Turn, frames: Frames, gone: asyncio.Future[None], send: Send) -> None:
    redactor = await db(thread_redactor)(turn.thread_id)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream; charset=utf-8"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),  # nginx: pass each event on at once
                *_turn_headers(turn),
            ],
        }
    )

    async def write(*parts: bytes) -> None:
        await send({"type": "http.response.body", "body": b"".join(parts), "more_body": True})

    stream = ChatStream(turn) if turn.ask.api == "chat" else ResponsesStream(turn)
    await write(*stream.start())

    async def delta(message_id: str, text: str) -> None:
        await write(*stream.delta(message_id, text))

    async def keep_alive() -> None:
        await write(b": keep-alive\n\n")

    try:
        state = await _follow(turn, frames, gone, redactor, delta, heartbeat=keep_alive)
        error = _timeout(turn) if state is None else _failed(state)
        if error is None:
            usage = await db(turn_usage)(turn.thread_id, turn.question_id)
            await write(*stream.completed(usage))
    except (ClientGone, asyncio.CancelledError):
        raise
    except Exception as exc:
        # The status went out with the headers: what failed is told as the stream's error.
        logger.exception("Streaming thread %s failed", turn.thread_id)
        reason = overload_reason(exc) or "Internal error"
        error = OpenAIError(503 if reason != "Internal error" else 500, reason, type="server_error")
    if error is not None:
        await write(*stream.failed(error))
    await send({"type": "http.response.body", "body": b"", "more_body": False})


class ChatStream:
    """``chat.completion.chunk`` events; the replies of one turn are one message's content,
    apart by a blank line, as the non-streamed answer joins them."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.last: str | None = None

    def start(self) -> list[bytes]:
        return [wire.sse(wire.chat_chunk(self.turn, {"role": "assistant", "content": ""}))]

    def delta(self, message_id: str, text: str) -> list[bytes]:
        if self.last is not None and self.last != message_id:
            text = "\n\n" + text
        self.last = message_id
        return [wire.sse(wire.chat_chunk(self.turn, {"content": text}))]

    def completed(self, usage: Any) -> list[bytes]:
        events = [wire.sse(wire.chat_chunk(self.turn, {}, finish="stop"))]
        if self.turn.ask.include_usage:
            events.append(wire.sse(wire.chat_chunk(self.turn, usage=usage)))
        return [*events, wire.DONE]

    def failed(self, error: OpenAIError) -> list[bytes]:
        # OpenAI's clients raise on an event carrying ``error``.
        return [wire.sse(error.body())]


class ResponsesStream:
    def __init__(self, turn: Turn) -> None:
        self.events = wire.ResponseEvents(turn)

    def start(self) -> list[bytes]:
        return self.events.started()

    def delta(self, message_id: str, text: str) -> list[bytes]:
        return self.events.delta(message_id, text)

    def completed(self, usage: Any) -> list[bytes]:
        return self.events.completed(usage)

    def failed(self, error: OpenAIError) -> list[bytes]:
        return self.events.failed(error)


# --- following a turn -------------------------------------------------------------------------


class Transcript:
    """What the client was sent of each reply: the streamed chunks, then, when a reply is
    final, whatever of its stored text they missed (a model that does not stream, frames the
    layer dropped). After a dropped frame (a gap in a stream's ``seq``) no more chunks are
    relayed: each reply's text then comes whole from its stored row, never with a hole."""

    def __init__(self) -> None:
        self.sent: dict[str, str] = {}
        self.closed: set[str] = set()
        self.seq: dict[str, int] = {}
        self.lossy = False

    def frame(self, meta: dict[str, Any]) -> None:
        """Note a frame's place in its stream (``seq``: consecutive per sender and group)."""
        stream, seq = meta.get("stream"), meta.get("seq")
        if not isinstance(stream, str) or not isinstance(seq, int):
            return
        last = self.seq.get(stream)
        if last is not None and seq > last + 1:
            self.lossy = True
        self.seq[stream] = max(seq, last or 0)

    def chunk(self, message_id: str, text: str) -> list[tuple[str, str]]:
        if self.lossy or message_id in self.closed:
            return []
        return self._send(message_id, text)

    def _send(self, message_id: str, text: str) -> list[tuple[str, str]]:
        if not text:
            return []
        self.sent[message_id] = self.sent.get(message_id, "") + text
        return [(message_id, text)]

    def stored(self, replies: list[Reply]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for reply in replies:
            if reply.id in self.closed or not reply.final:
                continue
            sent = self.sent.get(reply.id, "")
            # Text already sent cannot be taken back: only what follows it is added.
            if reply.text.startswith(sent):
                out += self._send(reply.id, reply.text[len(sent) :])
            self.closed.add(reply.id)
        return out


async def _follow(
    turn: Turn,
    frames: Frames,
    gone: asyncio.Future[None],
    redactor: Redactor | None,
    delta: Callable[[str, str], Awaitable[None]] | None,
    *,
    heartbeat: Callable[[], Awaitable[None]] | None = None,
) -> TurnState | None:
    """Wait until the turn's session ends (``None`` after ``STUDIO_OPENAI_WAIT_SECONDS``),
    handing ``delta`` each piece of reply text as it comes. ``ClientGone`` when the client
    went away."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.STUDIO_OPENAI_WAIT_SECONDS
    transcript = Transcript()
    checked = beat = loop.time()
    settling = False
    while True:
        if gone.done():
            raise ClientGone
        now = loop.time()
        if now >= deadline:
            return None
        interval = SETTLE_SECONDS if settling else POLL_SECONDS
        events = await frames.next(max(0.0, min(deadline - now, checked + interval - now)))
        check = loop.time() - checked >= interval
        pieces: list[tuple[str, str]] = []
        for event in events:
            meta = meta_of(event)
            transcript.frame(meta)
            kind = meta.get("type")
            if kind == "message_chunk" and delta is not None and not meta.get("depth"):
                frame = frame_of(event)
                text = str(frame.get("chunk") or "")
                if redactor is not None:
                    text = redactor.text(text)
                pieces += transcript.chunk(str(frame.get("message_id")), text)
            elif kind == "stopped":
                settling = check = True
            elif kind == "message_data" and not meta.get("depth"):
                data = frame_of(event).get("data") or {}
                if data.get("role") == "assistant" and data.get("status") != "pending":
                    check = True
        state: TurnState | None = None
        if check:
            checked = loop.time()
            state = await db(turn_state)(turn.thread_id, turn.question_id)
            pieces += transcript.stored(state.replies)
        if delta is not None:
            for message_id, text in pieces:
                await delta(message_id, text)
        if state is not None and state.done:
            return state
        if heartbeat is not None and loop.time() - beat >= HEARTBEAT_SECONDS:
            beat = loop.time()
            await heartbeat()


class Frames:
    """The thread's live frames, joined before the turn's message is posted.

    One task reads the channel layer and queues what it gets: the Redis Pub/Sub layer
    unsubscribes a channel whose ``receive`` is cancelled, so the waits with a timeout are
    here, never on the layer."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.arrived: collections.deque[dict[str, Any]] = collections.deque()
        self.ready = asyncio.Event()
        self.group: str | None = None
        self.channel: str | None = None
        self.reader: asyncio.Task[None] | None = None

    async def join(self, thread_id: str) -> None:
        if self.layer is None:
            return  # no channel layer: the stored rows alone, read every POLL_SECONDS
        await keep_listening(self.layer)
        self.channel = await self.layer.new_channel()
        self.group = thread_group(thread_id)
        await self.layer.group_add(self.group, self.channel)
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.channel is not None
        try:
            while True:
                message = await self.layer.receive(self.channel)
                events = message["events"] if message.get("type") == THREAD_FRAMES else [message]
                for event in events:
                    if event.get("type") == THREAD_FRAME:
                        self.arrived.append(event)
                self.ready.set()
        except asyncio.CancelledError:
            raise
        except Exception:
            # The stored rows still tell the answer, only later.
            logger.warning("Live frames of %s stopped", self.group, exc_info=True)

    async def next(self, timeout: float) -> list[dict[str, Any]]:
        """The frames that arrived, waiting up to ``timeout`` for the first. (Waiting on an
        event, not on a queue's ``get``: a ``wait_for`` that times out as a ``get``
        completes drops that item on Python 3.11, and a lost chunk would be a hole in the
        text.)"""
        if not self.arrived:
            self.ready.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ready.wait(), timeout)
        events = list(self.arrived)
        self.arrived.clear()
        return events

    async def leave(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.reader
            self.reader = None
        if self.group is not None and self.channel is not None:
            with contextlib.suppress(Exception):
                await self.layer.group_discard(self.group, self.channel)
            self.group = None


# --- answers ----------------------------------------------------------------------------------


async def _json(
    send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = wire.encode(body)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def _error(send: Send, error: OpenAIError, turn: Turn | None = None) -> None:
    headers = _turn_headers(turn) if turn is not None else []
    if error.retry_after is not None:
        headers.append((b"retry-after", str(error.retry_after).encode()))
    if error.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if isinstance(error, _MethodNotAllowed):
        headers.append((b"allow", error.allow.encode()))
    # Once a turn was posted, a retry would post the message again: OpenAI's clients obey
    # this header instead of retrying every 409 and 5xx.
    retry = error.retry if error.retry is not None else (False if turn is not None else None)
    if retry is not None:
        headers.append((b"x-should-retry", b"true" if retry else b"false"))
    await _json(send, error.status, error.body(), headers)


def with_openai(django_app: Any, prefix: str = PREFIX) -> Any:
    """An ASGI app serving ``prefix`` (and everything under it) with the OpenAI-compatible
    API, everything else with ``django_app``."""

    async def route(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == prefix or path.startswith(prefix + "/"):
            await app(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return route
