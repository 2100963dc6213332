"""The user event stream (spec 0.2.0 user scope, §4): ``WS /api/users/me/stream``.

``emit(user_id, event, data)`` sends ``{"event": …, "data": …}`` to every open socket of
that user (the channel-layer group ``user-<id>``), after the caller's transaction commits:
live only, at most once, no replay (a client that reconnects reloads what it needs over
HTTP). Each socket has a client id, told to it in its first frame; ``client_ids(user_id)``
lists the open ones and ``send(user_id, client_id, frame)`` reaches one.

The open sockets are rows (``UserStreamClient``), so every Daphne process sees every
socket: a socket writes its row when it opens, deletes it when it closes and touches it
every ``TOUCH_SECONDS`` while it lives; a row whose process died without closing stops
counting after ``STALE_SECONDS``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

from agents_app.base.errors import Invalid
from agents_app.models import UserStreamClient

logger = logging.getLogger("agents_app.user_stream")

USER_EVENT = "user.event"  # a channel-layer message: {"type", "text"}
USER_FRAME = "user.frame"  # one socket's frame, from send()
TOUCH_SECONDS = 60
STALE_SECONDS = 3 * TOUCH_SECONDS
FRAME_MAX = 1024 * 1024
EVENT_MAX = 200


def user_group(user_id: Any) -> str:
    return f"user-{user_id}"


def _encoded(frame: dict[str, Any]) -> str:
    try:
        text = json.dumps(frame, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise Invalid(f"A user event's data must be JSON: {exc}") from None
    if len(text.encode("utf-8")) > FRAME_MAX:
        raise Invalid(f"A user event frame is at most {FRAME_MAX // 1024} KiB.")
    return text


def _deliver(coro_factory: Any) -> None:
    """Run a channel-layer send now: scheduled on the running loop from async code, across
    to it from sync code. Never raises: events are at most once."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    try:
        if loop is not None:
            task = loop.create_task(coro_factory())
            task.add_done_callback(_log_failure)
        else:

            async def send_now() -> None:
                await coro_factory()

            async_to_sync(send_now)()
    except Exception:
        logger.warning("user event not delivered", exc_info=True)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.warning("user event not delivered: %s", type(task.exception()).__name__)


def _after_commit(send_now: Any) -> None:
    """``send_now`` once the caller's transaction commits. Async code has no transaction
    of its own here (the ORM runs in ``sync_to_async``), so from a running loop it goes now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        transaction.on_commit(send_now)
        return
    send_now()


def emit(user_id: int, event: str, data: object) -> None:
    """Send ``{"event": event, "data": data}`` to every open stream socket of ``user_id``,
    once the caller's transaction commits (at once outside one). ``Invalid`` when the
    event name is empty or too long, or ``data`` is not JSON."""
    if not isinstance(event, str) or not 0 < len(event) <= EVENT_MAX:
        raise Invalid(f"A user event's name is 1 to {EVENT_MAX} characters.")
    text = _encoded({"event": event, "data": data})
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": USER_EVENT, "text": text}
    group = user_group(user_id)
    _after_commit(lambda: _deliver(lambda: layer.group_send(group, message)))


def client_ids(user_id: int) -> list[str]:
    """The client ids of ``user_id``'s open stream sockets, oldest first."""
    fresh = timezone.now() - timedelta(seconds=STALE_SECONDS)
    rows = UserStreamClient.objects.filter(user_id=user_id, seen_at__gte=fresh)
    return list(rows.order_by("seen_at", "client_id").values_list("client_id", flat=True))


def send(user_id: int, client_id: str, frame: dict[str, Any]) -> bool:
    """Send ``frame`` to one socket of ``user_id``; ``False`` when no such socket is open."""
    if not isinstance(frame, dict):
        raise Invalid("A frame sent to a client is a JSON object.")
    text = _encoded(frame)
    fresh = timezone.now() - timedelta(seconds=STALE_SECONDS)
    channel = (
        UserStreamClient.objects.filter(user_id=user_id, client_id=client_id, seen_at__gte=fresh)
        .values_list("channel_name", flat=True)
        .first()
    )
    layer = get_channel_layer()
    if channel is None or layer is None:
        return False
    message = {"type": USER_FRAME, "text": text}
    _after_commit(lambda: _deliver(lambda: layer.send(channel, message)))
    return True


# --- the socket's side (agents_app.sockets.user_stream) ------------------------------------


def client_open(user_id: int, channel_name: str) -> str:
    """Record a socket that opened; its new client id."""
    client_id = "client_" + secrets.token_hex(12)
    # Rows a dead process left behind go as their user's next socket opens (indexed, cheap).
    stale = timezone.now() - timedelta(seconds=STALE_SECONDS)
    UserStreamClient.objects.filter(user_id=user_id, seen_at__lt=stale).delete()
    UserStreamClient.objects.create(
        client_id=client_id, user_id=user_id, channel_name=channel_name, seen_at=timezone.now()
    )
    return client_id


def client_touch(client_id: str) -> None:
    UserStreamClient.objects.filter(client_id=client_id).update(seen_at=timezone.now())


def client_close(client_id: str) -> None:
    UserStreamClient.objects.filter(client_id=client_id).delete()


def clients_forget_stale() -> int:
    """Delete the rows of sockets whose process died (housekeeping may call it)."""
    stale = timezone.now() - timedelta(seconds=STALE_SECONDS)
    deleted, _ = UserStreamClient.objects.filter(seen_at__lt=stale).delete()
    return deleted
