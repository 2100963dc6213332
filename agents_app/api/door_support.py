"""What the doors in front of Django (``/v1``, ``/a2a``, ``/ag-ui``) share: the gates a
request passes before it reaches an agent, and the wait for a turn's session.

Each door is an ASGI app outside Django (``studio/asgi.py``: a turn waits seconds to
minutes on the server's loop, not in a view's thread), so each applies the thread API's
gates itself: ``host_allowed`` (``ALLOWED_HOSTS``), ``authenticate`` (the API key or login
token, with its per-key limits), ``read_body`` (the body size limit). One copy here keeps
the three doors from drifting apart on who may come in.

The wait: ``Frames`` joins the thread's live frames before the turn's message is posted
(``post_turn``), and ``follow`` relays the reply's chunks as they stream and reads the
stored rows when a reply or the session ends (and every ``POLL_SECONDS`` besides): frames
the channel layer dropped only delay text, they never lose it (``Transcript``). Every wait
is bounded (``STUDIO_OPENAI_WAIT_SECONDS``). Each door speaks its own wire and its own
errors over these; ``BodyTooLarge`` and ``ClientGone`` are for it to translate.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from agents_app.broadcast.events import thread_group
from agents_app.broadcast.listening import keep_listening
from agents_app.broadcast.live_frames import THREAD_FRAME, THREAD_FRAMES, frame_of, meta_of
from agents_app.orchestration.openai_turns import Opened, Turn, turn_post, turn_stop
from agents_app.services.access.api_keys import api_key_in_use
from agents_app.services.access.login_tokens import TOKEN_PREFIX, login_token_user
from agents_app.services.doors.openai_compat import Reply, TurnState, turn_state
from agents_app.services.env.redaction import Redactor

logger = logging.getLogger("agents_app.api.door_support")

POLL_SECONDS = 1.0  # stored rows read at least this often while a turn runs
SETTLE_SECONDS = 0.1  # ... and this often once the session said it stopped
HEARTBEAT_SECONDS = 15.0  # an SSE comment: proxies keep the stream, a gone client shows
_DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
db = database_sync_to_async


@dataclass(frozen=True)
class Caller:
    """Who a door's request comes from: the user, and the API key whose limits apply
    (``None`` for a login token)."""

    user: Any
    api_key_id: int | None


class ClientGone(Exception):
    """The client closed the connection."""


class BodyTooLarge(Exception):
    """The request body is over ``DATA_UPLOAD_MAX_MEMORY_SIZE``: each door answers 413 in
    its own error shape."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.message = f"Request body too large (over {limit} bytes)"
        super().__init__(self.message)


# --- the gates --------------------------------------------------------------------------------


def request_headers(scope: dict[str, Any]) -> dict[str, str]:
    """The request's headers, names lower-cased (the last of a repeated one)."""
    return {k.decode("latin1").lower(): v.decode("latin1") for k, v in scope.get("headers") or []}


def host_allowed(headers: dict[str, str]) -> bool:
    """``ALLOWED_HOSTS`` as Django applies it (the doors run before Django sees a request)."""
    host = headers.get("host", "")
    if settings.USE_X_FORWARDED_HOST and headers.get("x-forwarded-host"):
        host = headers["x-forwarded-host"].split(",")[0].strip()
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = _DEBUG_HOSTS
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def authenticate(authorization: str) -> Caller | None:
    """The thread API's bearer credentials: an API key (its per-key limits apply) or a
    login token, of an active user; ``None`` for anything else."""
    if authorization[:7].lower() != "bearer ":
        return None
    token = authorization[7:].strip()
    if token.startswith(TOKEN_PREFIX):
        user = login_token_user(token)
        return Caller(user, None) if user is not None else None
    key = api_key_in_use(token)
    return Caller(key.user, key.pk) if key is not None else None


async def read_body(receive: Receive) -> bytes:
    """The whole request body; ``BodyTooLarge`` past the limit (read no further),
    ``ClientGone`` when the client left first."""
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
            raise BodyTooLarge(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def wait_for_disconnect(receive: Receive) -> None:
    """Returns when the client goes away (run it as a task beside a wait)."""
    while (await receive())["type"] != "http.disconnect":
        pass


# --- a turn -----------------------------------------------------------------------------------


async def post_turn(opened: Opened, caller: Caller) -> Turn:
    """``turn_post`` from the server's loop. The post runs on to its commit even if this
    request is cancelled meanwhile; the session it started is then stopped."""
    posting = asyncio.ensure_future(db(turn_post)(opened))
    try:
        return await asyncio.shield(posting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await stop_or_log(await posting, caller)
        raise


async def stop_or_log(turn: Turn, caller: Caller) -> None:
    """Stop the turn's session because its client went away (logged if that fails)."""
    try:
        await db(turn_stop)(turn, caller.user)
    except Exception:
        logger.exception(
            "A client went away; could not stop the session of thread %s", turn.thread_id
        )


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


async def follow(
    turn: Turn,
    frames: Frames,
    gone: asyncio.Future[None],
    redactor: Redactor | None,
    delta: Callable[[str, str], Awaitable[None]] | None,
    *,
    heartbeat: Callable[[], Awaitable[None]] | None = None,
    observe: Callable[[dict[str, Any]], bool] | None = None,
    on_check: Callable[[TurnState], Awaitable[None]] | None = None,
) -> TurnState | None:
    """Wait until the turn's session ends (``None`` after ``STUDIO_OPENAI_WAIT_SECONDS``),
    handing ``delta`` each piece of reply text as it comes. ``ClientGone`` when the client
    went away.

    Two hooks for a door that tells more than text (``/ag-ui``): ``observe`` sees each
    frame's meta and answers whether the stored rows should be read now; ``on_check`` gets
    each state read, after the text it added went to ``delta``, so a door that reads more
    rows there never gets ahead of the text."""
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
            if observe is not None and observe(meta):
                check = True
        state: TurnState | None = None
        if check:
            checked = loop.time()
            state = await db(turn_state)(turn.thread_id, turn.question_id)
            pieces += transcript.stored(state.replies)
        if delta is not None:
            for message_id, text in pieces:
                await delta(message_id, text)
        if state is not None and on_check is not None:
            await on_check(state)
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


async def send_json(
    send: Any, status: int, data: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """One whole JSON answer (``data`` already encoded by the door's wire module), never
    cached: every door answers a person's own data."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def mounted(prefix: str, door: Any, django_app: Any) -> Any:
    """An ASGI app serving ``prefix`` (and everything under it) with ``door``, everything
    else with ``django_app`` (how studio/asgi.py puts each door in front of Django)."""

    async def route(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == prefix or path.startswith(prefix + "/"):
            await door(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return route
