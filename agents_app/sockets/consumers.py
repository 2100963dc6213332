"""WebSocket consumers: the thread message stream, the thread logs stream, registry events.

Consumers only authorize and relay: frames arrive on the channel layer from the
session runner (``LiveSink``) or from services (on commit), and each socket
applies its own filters (``includeSilent``, ``depth``, ``reasoning``).

Refusals happen after the handshake: the socket is accepted, gets one
``{"type": "error", "error": …, "status": …}`` frame and is closed with code
``4000 + status`` (4401 no credentials, 4403 someone else's thread, 4404 unknown
thread), because browsers cannot read the HTTP status of a refused handshake.

Sockets follow their credentials (``services.access.socket_credentials``): each joins the group
of the credential it was opened with, and closes with the same 4401 (after an error
frame saying so) when that key is revoked or that session signs out.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

from channels.auth import get_user
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from channels.middleware import BaseMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware
from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from agents_app.base.errors import DomainError
from agents_app.base.permissions import ThreadAction, may_see_all_threads
from agents_app.broadcast import catch_up
from agents_app.broadcast.events import REGISTRY_ALL, logs_group, registry_user_group, thread_group
from agents_app.broadcast.listening import keep_listening
from agents_app.broadcast.live_frames import THREAD_FRAMES, encode, frame_of, meta_of, text_of
from agents_app.selectors import access_thread
from agents_app.services.access.api_keys import api_key_in_use
from agents_app.services.access.login_tokens import (
    TOKEN_PREFIX,
    login_token_user,
    token_session_key,
)
from agents_app.services.access.socket_credentials import (
    CLOSE_REVOKED,
    REVOKED_ERROR,
    SocketCredential,
    credential_valid,
    key_credential,
    session_credential,
    user_sockets_group,
)
from agents_app.services.access.tickets import ticket_open
from agents_app.services.env.redaction import RedactorCache
from agents_app.sockets.consumer_loop import dispatch_from
from agents_app.sockets.socket_db import socket_db

logger = logging.getLogger("agents_app.sockets.consumers")

PINGS = {"stream_ping": "stream_pong", "ping": "pong"}
CHUNKS = ("message_chunk", "reasoning_chunk")
LOG_FRAMES = ("log_data",)
# Frames about one message (filtered by its depth like the chunks).
LIVE_MESSAGE_FRAMES = (
    "message_data",
    "message_image",
    "provider_tool_done",
    "web_search_done",
)


class _RelayDispatch:
    """Every message goes straight to its handler, without Channels' per-message
    ``aclose_old_connections`` (a hop to the one shared sync thread per frame per socket,
    which queued frames behind every other socket's database work). Our handlers reach
    the database only through ``socket_db``, which closes old connections itself.

    ``__call__`` is Channels' ``AsyncConsumer.__call__`` (4.x) with the receive loop of
    ``consumer_loop`` instead of ``await_many_dispatch``: no new task per frame."""

    channel_layer_alias: str

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        sources = [receive]
        if self.channel_layer is not None:
            # Before the socket subscribes: its first frames are then read as they arrive.
            await keep_listening(self.channel_layer)
            self.channel_name = await self.channel_layer.new_channel()
            self.channel_receive = functools.partial(self.channel_layer.receive, self.channel_name)
            sources.append(self.channel_receive)
        self.base_send = send
        with contextlib.suppress(StopConsumer):
            await dispatch_from(sources, self.dispatch)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # A group's frames may come as one message (``live_frames.frames_event``), in order.
        events = message["events"] if message.get("type") == THREAD_FRAMES else (message,)
        handler = getattr(self, get_handler_name(events[0]), None)
        if handler is None:
            raise ValueError(f"No handler for message type {events[0].get('type')}")
        for event in events:
            await handler(event)


# --- authentication -------------------------------------------------------------------------


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {k.decode("latin1").lower(): v.decode("latin1") for k, v in scope.get("headers", [])}


def _origin_allowed(headers: dict[str, str]) -> bool:
    """A session cookie only counts for same-origin (or trusted-origin) pages: a cookie is
    sent by the browser from any site, so cross-site pages could open sockets otherwise."""
    origin = headers.get("origin")
    if not origin:
        return True
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    return urlsplit(origin).netloc == headers.get("host", "")


Authenticated = tuple[Any, str | None, SocketCredential | None]
_NOBODY: Authenticated = (None, None, None)


class WebSocketAuthMiddleware(BaseMiddleware):
    """Sets ``scope["user"]``, ``scope["auth_type"]`` and ``scope["credential"]`` (what the
    socket follows): a ``?ticket=`` (single use, bound to this path, carrying the credential
    that minted it), an ``Authorization: Bearer`` API key or login token, or the session
    cookie (same origin)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        scope = dict(scope)
        user, kind, credential = await self.authenticate(scope)
        scope["user"], scope["auth_type"] = user or AnonymousUser(), kind
        scope["credential"] = credential
        return await super().__call__(scope, receive, send)

    async def authenticate(self, scope: dict[str, Any]) -> Authenticated:
        query = parse_qs(scope.get("query_string", b"").decode("latin1"))
        if "ticket" in query:
            opened = await socket_db(
                lambda: ticket_open(raw=query["ticket"][0], pathname=scope.get("path", ""))
            )
            return (opened[0], "ticket", opened[1]) if opened else _NOBODY
        headers = _headers(scope)
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token:
            token = token.strip()
            if token.startswith(TOKEN_PREFIX):
                user = await socket_db(login_token_user, token)
                session_key = token_session_key(token)
                if user is None or not session_key:
                    return _NOBODY
                return user, "session", session_credential(session_key)
            key = await socket_db(api_key_in_use, token)
            return (key.user, "api_key", key_credential(key.pk)) if key else _NOBODY
        if "session" in scope and _origin_allowed(headers):
            user = await get_user(scope)
            session_key = scope["session"].session_key
            if user.is_authenticated and session_key:
                return user, "session", session_credential(session_key)
        return _NOBODY


class _FramesPastSessions(InstanceSessionWrapper):  # type: ignore[misc]
    """Channels' session wrapper checks the session on every message a socket sends,
    to save it on ``websocket.accept``. Our sockets read the session and never change it,
    and a frame (``websocket.send``) is never a message it saves on, so frames go straight
    to the server: the check was ~5% of a relaying Daphne's CPU (issue #21)."""

    async def send(self, message: dict[str, Any]) -> Any:
        if message["type"] == "websocket.send":
            return await self.real_send(message)
        return await super().send(message)


class _SocketSessions(SessionMiddleware):  # type: ignore[misc]
    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        wrapper = _FramesPastSessions(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, wrapper.send)


def websocket_auth(inner: Any) -> Any:
    return CookieMiddleware(_SocketSessions(WebSocketAuthMiddleware(inner)))


# --- consumers ---------------------------------------------------------------------------------


class _FollowsCredential(AsyncWebsocketConsumer):
    """A socket that closes when the credential it was opened with is revoked."""

    async def join_credential(self, joined: list[str]) -> None:
        credential = self.scope.get("credential")
        if credential is not None:
            await self.channel_layer.group_add(credential.group, self.channel_name)
            joined.append(credential.group)
        user = self.scope.get("user")
        if user is not None and getattr(user, "pk", None):
            group = user_sockets_group(user.pk)
            await self.channel_layer.group_add(group, self.channel_name)
            joined.append(group)

    async def credential_holds(self) -> bool:
        """Whether the credential still authenticates the socket's user; closes it if not."""
        if await socket_db(credential_valid, self.scope.get("credential"), self.scope.get("user")):
            return True
        await self.credential_revoked({})
        return False

    async def credential_revoked(self, event: dict[str, Any]) -> None:
        """``credential.revoked`` (``services.access.socket_credentials``): an error frame, then 4401."""
        await self.send(text_data=encode({"type": "error", "error": REVOKED_ERROR, "status": 401}))
        await self.close(code=CLOSE_REVOKED)


def _flag(query: dict[str, list[str]], name: str) -> bool:
    value = query.get(name, [""])[0].strip().lower()
    return value not in ("", "0", "false", "no")


class _ThreadSocket(_RelayDispatch, _FollowsCredential):
    """Authorize the thread, join its group, answer pings, redact every frame sent."""

    # What the socket lets its user do with the thread (permissions.ThreadRule): watching
    # is "view"; the client-tool bridge, which answers tool calls, says "change".
    thread_action: ThreadAction = "view"

    thread_id: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.redactors = RedactorCache()

    async def connect(self) -> None:
        self.thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        refusal = await self._refusal()
        self.joined: list[str] = []
        if refusal is None:
            # Join before accepting: once the client sees the socket open, no frame is missed.
            for group in self.groups_to_join():
                await self.channel_layer.group_add(group, self.channel_name)
                self.joined.append(group)
            await self.join_credential(self.joined)
        await self.accept()
        if refusal is not None:
            status, message = refusal
            await self.send_json({"type": "error", "error": message, "status": status})
            await self.close(code=4000 + status)

    async def _refusal(self) -> tuple[int, str] | None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return 401, "Unauthorized"
        try:
            self.thread_id = await socket_db(self._admit, self.thread_id, user)
        except DomainError as exc:
            return exc.status, exc.message
        return None

    def _admit(self, thread_id: str, user: Any) -> str:
        """The thread's id if ``user`` may watch it, with its redactor loaded on the same
        database thread and connection: the socket's first frame then finds it ready, so a
        reply's first token does not wait for a secrets query (nor do hundreds of sockets
        whose sessions start at once queue for one, issue #21)."""
        thread = access_thread(thread_id, user, id_only=True, action=self.thread_action)
        self.redactors.get(str(thread.pk))
        return str(thread.pk)

    def groups_to_join(self) -> list[str]:
        return [thread_group(self.thread_id)]

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        reply = PINGS.get((text_data or "").strip())
        if reply is not None:
            await self.send(text_data=reply)

    async def send_text(self, text: str) -> None:
        # Every frame passes the thread's redactor (secrets cached per consumer, reloaded
        # after REFRESH_SECONDS): the engine redacts its frames, this covers the rest. The
        # redactor knows each secret's JSON-escaped forms, so it applies to the encoded text.
        if self.thread_id and getattr(self, "joined", None):
            redactor = self.redactors.fresh(self.thread_id)
            if redactor is None:
                redactor = await socket_db(self.redactors.get, self.thread_id)
            if redactor:
                text = redactor.text(text)
        await self.send(text_data=text)

    async def send_json(self, data: dict[str, Any]) -> None:
        await self.send_text(encode(data))


class ThreadStreamConsumer(_ThreadSocket):
    """``/api/threads/{id}/stream?includeSilent=true&depth=N&reasoning=1``.

    Relays ``message_data``, ``message_chunk``, opt-in ``reasoning_chunk``,
    telemetry and ``event`` frames. Frames carry ``seq`` and ``stream``; when a
    stream skips numbers (the channel layer dropped frames) the socket first sends
    ``{"type": "resync", …}``: reload ``GET …/messages`` and go on.
    """

    async def connect(self) -> None:
        self.include_silent = _flag(self.query_of(), "includeSilent")
        self.reasoning = _flag(self.query_of(), "reasoning")
        try:
            self.max_depth = max(0, int(self.query_of().get("depth", ["0"])[0]))
        except ValueError:
            self.max_depth = 0
        self.last_seq: dict[str, int] = {}
        # Replies this socket was sent from the catch-up list: message id -> (stream, seq).
        self.caught: dict[str, tuple[str, int]] = {}
        await super().connect()
        if getattr(self, "joined", None):
            await self.send_catch_up()

    async def send_catch_up(self) -> None:
        """A reply streaming as the socket joins is sent as streamed so far (``catch_up``):
        its pending row with the text in ``content``. The group was joined first, so
        later chunks are relayed; the ones already in that text are dropped (``caught``)."""
        replies = await catch_up.read(self.channel_layer, thread_group(self.thread_id))
        for message_id, reply in replies.items():
            if reply.depth > self.max_depth:
                continue
            self.caught[message_id] = (reply.stream, reply.seq)
            await self.send_json(catch_up.catch_up_frame(message_id, reply, self.reasoning))

    def query_of(self) -> dict[str, list[str]]:
        return parse_qs(self.scope.get("query_string", b"").decode("latin1"))

    def wanted(self, meta: dict[str, Any]) -> bool:
        """Whether this socket's filters let a frame through (``meta``: ``live_frames``)."""
        kind = meta.get("type")
        if kind in LOG_FRAMES:
            return False
        if kind == "reasoning_chunk" and not self.reasoning:
            return False
        if (kind in CHUNKS or kind in LIVE_MESSAGE_FRAMES) and int(
            meta.get("depth") or 0
        ) > self.max_depth:
            return False
        return not (kind == "message_data" and meta.get("silent") and not self.include_silent)

    async def thread_frame(self, event: dict[str, Any]) -> None:
        meta = meta_of(event)
        stream, seq = meta.get("stream"), meta.get("seq")
        if isinstance(stream, str) and isinstance(seq, int):
            last = self.last_seq.get(stream)
            if last is not None and seq > last + 1:
                await self.send_json(
                    {"type": "resync", "reason": "frames dropped", "missed": seq - last - 1}
                )
            self.last_seq[stream] = max(seq, last or 0)
            if self.caught and self._already_sent(event, meta, stream, seq):
                return
        if self.wanted(meta):
            await self.send_text(text_of(event))

    def _already_sent(
        self, event: dict[str, Any], meta: dict[str, Any], stream: str, seq: int
    ) -> bool:
        """Whether the catch-up this socket was sent already holds this frame's text."""
        if meta.get("type") not in CHUNKS and meta.get("type") != "message_data":
            return False
        frame = frame_of(event)
        caught = self.caught.get(str(frame.get("message_id")))
        if caught is None:
            return False
        if (
            meta.get("type") == "message_data"
            and (frame.get("data") or {}).get("status") != "pending"
        ):
            del self.caught[str(frame.get("message_id"))]
            return False
        return caught[0] == stream and seq <= caught[1]


class ThreadLogsConsumer(_ThreadSocket):
    """``/api/threads/{id}/logs`` (WebSocket): ``log_data``, ``kv_data``, ``stopped_by_user``."""

    def groups_to_join(self) -> list[str]:
        return [thread_group(self.thread_id), logs_group(self.thread_id)]

    async def thread_frame(self, event: dict[str, Any]) -> None:
        meta = meta_of(event)
        kind = meta.get("type")
        if kind == "log_data" or kind == "stopped_by_user":
            await self.send_text(text_of(event))
        elif kind == "event" and meta.get("eventType") == "kv_changed":
            await self.send_json({"type": "kv_data", **(frame_of(event).get("data") or {})})


class RegistryConsumer(_RelayDispatch, _FollowsCredential):
    """``/api/events?scope=user|all``: thread created/updated/deleted/activity frames."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        query = parse_qs(self.scope.get("query_string", b"").decode("latin1"))
        scope = query.get("scope", ["user"])[0]
        refusal = None
        if user is None or not user.is_authenticated:
            refusal = (401, "Unauthorized")
        elif scope not in ("user", "all"):
            refusal = (400, "scope must be 'user' or 'all'")
        elif scope == "all" and not await socket_db(may_see_all_threads, user):
            refusal = (403, "Forbidden: Admin access required (permission agents_app.view_thread)")
        self.joined: list[str] = []
        if refusal is None:
            group = REGISTRY_ALL if scope == "all" else registry_user_group(user.pk)
            await self.channel_layer.group_add(group, self.channel_name)
            self.joined.append(group)
            await self.join_credential(self.joined)
        await self.accept()
        if refusal is not None:
            await self.send(
                text_data=encode({"type": "error", "error": refusal[1], "status": refusal[0]})
            )
            await self.close(code=4000 + refusal[0])

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        reply = PINGS.get((text_data or "").strip())
        if reply is not None:
            await self.send(text_data=reply)

    async def registry_frame(self, event: dict[str, Any]) -> None:
        await self.send(text_data=text_of(event))


class NotFoundConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.accept()
        await self.send(text_data=encode({"type": "error", "error": "Not found", "status": 404}))
        await self.close(code=4404)
