"""``/api/users/me/stream`` and, for admins, ``/api/users/{id}/stream`` (spec 0.2.0 user
event stream): every ``emit`` of that user's scope as ``{"event": …, "data": …}`` frames.

Authentication is the thread stream's (``consumers.websocket_auth``: a ticket, a bearer
credential or the same-origin session cookie), refusals too (an error frame, then close
``4000 + status``). The first frame is ``{"type": "connected", "clientId": …}``: the id
``clients()`` lists and ``send(clientId, frame)`` reaches; the user hooks
``user_client_attached`` / ``user_client_detached`` run as it opens and closes. The socket follows its credential
and its account: a revoked key, a sign-out or a deactivation closes it with 4401; an admin
watching someone else's stream is closed the same way when that person is deactivated.

Every event and frame passes the person's redactor before it is sent, as thread frames pass
the thread's (``services.env.redaction.user_redactor``: loaded as the socket opens, reloaded
after ``REFRESH_SECONDS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from django.contrib.auth import get_user_model

from agents_app.base.permissions import USERS_STREAM, may
from agents_app.broadcast.live_frames import encode
from agents_app.services.access.socket_credentials import credential_valid, user_sockets_group
from agents_app.services.env.redaction import REFRESH_SECONDS, user_redactor
from agents_app.services.users import hooks, stream
from agents_app.sockets.consumers import PINGS, _FollowsCredential, _RelayDispatch
from agents_app.sockets.socket_db import socket_db

logger = logging.getLogger("agents_app.sockets.user_stream")
WATCHED_GONE = "Gone: the account whose stream this is was deactivated"


def _target(user: Any, wanted: str | None) -> tuple[int | None, tuple[int, str] | None]:
    """The user whose stream ``user`` opens (``wanted``: an id from the admin path), or a
    refusal ``(status, sentence)``."""
    if wanted is None:
        return user.pk, None
    if not may(user, USERS_STREAM):
        return None, (403, f"Forbidden: Admin access required (permission {USERS_STREAM})")
    if not wanted.isdigit() or not get_user_model()._default_manager.filter(pk=wanted).exists():
        return None, (404, f"User not found: {wanted[:40]}")
    return int(wanted), None


def _watchable(user_id: int) -> bool:
    """Whether the person whose stream an admin opens is (still) active."""
    return get_user_model()._default_manager.filter(pk=user_id, is_active=True).exists()


class UserStreamConsumer(_RelayDispatch, _FollowsCredential):
    """One user's event stream."""

    client_id = ""
    user_id: int | None = None
    redactor: Any = None
    redactor_loaded = 0.0

    async def connect(self) -> None:
        self.joined: list[str] = []
        user = self.scope.get("user")
        refusal: tuple[int, str] | None = None
        if user is None or not user.is_authenticated:
            refusal = (401, "Unauthorized")
        else:
            wanted = self.scope["url_route"]["kwargs"].get("user_id")
            self.user_id, refusal = await socket_db(_target, user, wanted)
        if refusal is None and self.user_id is not None:
            # Join before accepting: once the client sees the socket open, no event is missed.
            group = stream.user_group(self.user_id)
            await self.channel_layer.group_add(group, self.channel_name)
            self.joined.append(group)
            await self.join_credential(self.joined)
            if self.user_id != user.pk:
                # The watched person's deactivation closes the admin's socket too: it joins
                # the group offboarding tells (joined first, then checked, so none is missed).
                watched = user_sockets_group(self.user_id)
                await self.channel_layer.group_add(watched, self.channel_name)
                self.joined.append(watched)
                if not await socket_db(_watchable, self.user_id):
                    refusal = (404, f"User not found or deactivated: {self.user_id}")
        if refusal is None and self.user_id is not None:
            await self._load_redactor()
            self.client_id = await socket_db(stream.client_open, self.user_id, self.channel_name)
        await self.accept()
        if refusal is not None:
            await self.send(
                text_data=encode({"type": "error", "error": refusal[1], "status": refusal[0]})
            )
            await self.close(code=4000 + refusal[0])
            return
        await self.send(text_data=encode({"type": "connected", "clientId": self.client_id}))
        await socket_db(hooks.client_attached, self.user_id, self.client_id)
        self.toucher = asyncio.get_running_loop().create_task(self._touch())

    async def _touch(self) -> None:
        """Keep this socket's row fresh, so ``clients()`` counts it from every process."""
        while True:
            await asyncio.sleep(stream.TOUCH_SECONDS)
            try:
                await socket_db(stream.client_touch, self.client_id)
            except Exception:
                logger.warning("user stream client %s not touched", self.client_id, exc_info=True)

    async def disconnect(self, code: int) -> None:
        toucher = getattr(self, "toucher", None)
        if toucher is not None:
            toucher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await toucher
        for group in self.joined:
            await self.channel_layer.group_discard(group, self.channel_name)
        if self.client_id and self.user_id is not None:
            await socket_db(stream.client_close, self.client_id)
            await socket_db(hooks.client_detached, self.user_id, self.client_id)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        reply = PINGS.get((text_data or "").strip())
        if reply is not None:
            await self.send(text_data=reply)

    async def credential_revoked(self, event: dict[str, Any]) -> None:
        """Also told when the watched person is deactivated (an admin's socket on someone
        else's stream): then, if the admin's own credential still holds, 4410 and why."""
        user = self.scope.get("user")
        watching = self.user_id is not None and self.user_id != getattr(user, "pk", None)
        if watching and await socket_db(credential_valid, self.scope.get("credential"), user):
            await self.send(
                text_data=encode({"type": "error", "error": WATCHED_GONE, "status": 410})
            )
            await self.close(code=4410)
            return
        await super().credential_revoked(event)

    async def _load_redactor(self) -> None:
        self.redactor = await socket_db(user_redactor, self.user_id)
        self.redactor_loaded = time.monotonic()

    async def send_redacted(self, text: str) -> None:
        """``text`` (an encoded frame) with the person's secrets replaced; the redactor knows
        each secret's JSON-escaped forms, so it applies to the encoded text."""
        if time.monotonic() - self.redactor_loaded > REFRESH_SECONDS:
            await self._load_redactor()
        await self.send(text_data=self.redactor.text(text) if self.redactor else text)

    async def user_event(self, event: dict[str, Any]) -> None:
        """``stream.emit``: one ``{event, data}`` frame, encoded once by the sender."""
        await self.send_redacted(event["text"])

    async def user_frame(self, event: dict[str, Any]) -> None:
        """``stream.send``: a frame for this socket only."""
        await self.send_redacted(event["text"])
