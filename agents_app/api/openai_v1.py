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
posted (``orchestration/openai_turns.py``), and this module waits with the doors' shared
wait (``door_support``: the thread's live frames joined before the post, the reply's chunks
relayed as they stream, the stored rows as the truth). Every wait is bounded
(``STUDIO_OPENAI_WAIT_SECONDS``); a client that goes away stops the session it started.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from agents_app.api import openai_wire as wire
from agents_app.api.door_support import (
    BodyTooLarge,
    Caller,
    ClientGone,
    Frames,
    Receive,
    Send,
    authenticate,
    db,
    follow,
    host_allowed,
    mounted,
    post_turn,
    read_body,
    request_headers,
    send_json,
    stop_or_log,
    wait_for_disconnect,
)
from agents_app.base.overload import overload_reason, retry_after
from agents_app.base.storable_text import describe_unstorable, find_unstorable
from agents_app.orchestration.openai_turns import Opened, Turn, turn_open
from agents_app.selectors import agents_for
from agents_app.services.doors.openai_compat import (
    THREAD_HEADER,
    Ask,
    OpenAIError,
    TurnState,
    chat_ask,
    responses_ask,
    turn_usage,
)
from agents_app.services.env.redaction import thread_redactor

logger = logging.getLogger("agents_app.api.openai_v1")

PREFIX = "/v1"
MODEL_NAME_MAX = 128  # Agent.name


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
    headers = request_headers(scope)
    if not host_allowed(headers):
        raise OpenAIError(400, "Invalid Host header (not in ALLOWED_HOSTS)")
    method, path = scope.get("method", ""), scope["path"].rstrip("/")
    route = _route(method, path)
    caller = await db(authenticate)(headers.get("authorization", ""))
    if caller is None:
        raise OpenAIError(
            401,
            "Incorrect API key provided: send Authorization: Bearer <API key> (create one in "
            "the studio, or with POST /api/api-keys).",
            code="invalid_api_key",
        )
    if route == "models":
        # A picker: agents marked not primary (spec 0.2.0) stay addressable by name but
        # are not listed, as in the chat's picker.
        agents = await db(
            lambda: list(agents_for(caller.user).filter(primary=True).order_by("name"))
        )()
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
    body = _parsed(await _read(receive))
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


async def _read(receive: Receive) -> bytes:
    try:
        return await read_body(receive)
    except BodyTooLarge as exc:
        raise OpenAIError(413, exc.message, code="request_too_large") from None


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
        turn = await post_turn(opened, caller)
    except BaseException:
        await frames.leave()
        raise
    gone = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        if ask.stream:
            await _streamed(turn, frames, gone, send)
        else:
            await _answered(turn, frames, gone, send)
    except ClientGone:
        await stop_or_log(turn, caller)
    except asyncio.CancelledError:
        # The server gave up on the request (its client went away): nobody reads the answer.
        await asyncio.shield(stop_or_log(turn, caller))
        raise
    finally:
        gone.cancel()
        await frames.leave()


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
    state = await follow(turn, frames, gone, None, None)
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
        state = await follow(turn, frames, gone, redactor, delta, heartbeat=keep_alive)
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


# --- answers ----------------------------------------------------------------------------------


async def _json(
    send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send_json(send, status, wire.encode(body), extra)


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
    """``django_app`` with this door in front of it at ``prefix``."""
    return mounted(prefix, app, django_app)
