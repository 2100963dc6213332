"""``WS /api/threads/{id}/bridge``: the reference's client bridge (tools run in the client).

On connect the socket gets ``{"type": "bridge_ready", …}`` and then one ``tool_request``
frame per call of the thread waiting for the client (``services.sessions.client_bridge``), each
with a fresh ``deliveryToken``; calls parked later are delivered as their
``tool_call_waiting`` event or pending ``message_data`` frame passes on the thread's
group (and on the client's pings, should the layer have dropped that frame). The client
answers ``{"type": "tool_response", "id"|"toolCallId", "ok", "result"?, "error"?}`` here
(checked against the token this socket was sent) or by ``POST …/tool-result``.

Liveness, as in the reference: while a call delivered here has no result, the socket
must send something (``stream_ping`` will do) every ``STUDIO_BRIDGE_LIVENESS_SECONDS``
and answer within ``STUDIO_CLIENT_TOOL_TIMEOUT_SECONDS``; otherwise it is closed (4408)
and the call, still parked, goes to the next client that connects. A newer socket of the
same ``client_id`` supersedes an older one (``{"type": "superseded"}``, close 4001).

The socket acts for the credential it was opened with: revoking that key or signing out
closes it (4401, ``consumers._FollowsCredential``), and since that message may be lost,
the credential is checked again before a call is delivered here and before an answer
from here is recorded; a stale socket's answer is refused, and the call stays parked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from django.conf import settings

from agents_app.base.errors import DomainError
from agents_app.broadcast.live_frames import frame_of
from agents_app.models import Thread
from agents_app.services.sessions import client_bridge
from agents_app.sockets.consumers import PINGS, _ThreadSocket

CLOSE_UNRESPONSIVE = 4408
CLOSE_SUPERSEDED = 4001


class ThreadBridgeConsumer(_ThreadSocket):
    thread_action = "change"  # its answers become tool results

    async def connect(self) -> None:
        self.tokens: dict[str, str] = {}  # call id → the token this socket was sent
        self.sent_at: dict[str, float] = {}
        self.last_seen = time.monotonic()
        self.watchdog: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()
        await super().connect()
        if not getattr(self, "joined", None):
            return  # refused (the error frame and close were sent)
        await self.supersede_same_client()
        await self.send_json(
            {
                "type": "bridge_ready",
                "threadId": self.thread_id,
                "owner": True,
                "current_owner": None,
            }
        )
        await self.deliver_waiting()
        self.watchdog = asyncio.create_task(self.watch())

    async def disconnect(self, code: int) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
        await super().disconnect(code)

    async def supersede_same_client(self) -> None:
        """One socket per client identity (``?client_id=``), as the reference: an older socket
        of the same client, on any web process, gets ``{"type": "superseded"}`` and 4001."""
        query = parse_qs(self.scope.get("query_string", b"").decode("latin1"))
        client_id = (query.get("client_id") or [""])[0].strip()[:256]
        if not client_id:
            return
        digest = hashlib.sha256(f"{self.thread_id}:{client_id}".encode()).hexdigest()[:32]
        group = f"bridge-client-{digest}"
        await self.channel_layer.group_send(
            group, {"type": "bridge.superseded", "by": self.channel_name}
        )
        await self.channel_layer.group_add(group, self.channel_name)
        self.joined.append(group)

    async def bridge_superseded(self, event: dict[str, Any]) -> None:
        if event.get("by") == self.channel_name:
            return
        await self.send_json({"type": "superseded"})
        await self.close(code=CLOSE_SUPERSEDED)

    async def thread_frame(self, event: dict[str, Any]) -> None:
        frame = frame_of(event)  # thread frames travel encoded once (bridge/live_frames.py)
        data = frame.get("data") or {}
        waiting_event = frame.get("type") == "event" and (
            frame.get("eventType") == "tool_call_waiting" and data.get("kind") == "client"
        )
        pending_row = (
            frame.get("type") == "message_data"
            and data.get("role") == "tool"
            and data.get("status") == "pending"
        )
        if waiting_event or pending_row:
            await self.deliver_waiting()

    async def deliver_waiting(self) -> None:
        """Send every call that waits for the client and was not sent to this socket."""
        async with self.lock:
            calls = await sync_to_async(client_bridge.waiting_client_calls)(self.thread_id)
            new = [call_id for call_id in calls if call_id not in self.tokens]
            if new and not await self.credential_holds():
                return  # no call (nor delivery token) for a revoked credential's socket
            for call_id in new:
                sent = await sync_to_async(client_bridge.dispatch)(self.thread_id, call_id)
                if sent is None:
                    continue
                frame, token = sent
                self.tokens[call_id] = token
                self.sent_at[call_id] = time.monotonic()
                await self.send_json(frame)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        self.last_seen = time.monotonic()
        text = (text_data or "").strip()
        if text in PINGS:
            await self.send(text_data=PINGS[text])
            await self.deliver_waiting()
            return
        try:
            frame = json.loads(text)
        except ValueError:
            return
        if isinstance(frame, dict) and frame.get("type") == "tool_response":
            await self.tool_response(frame)

    async def tool_response(self, frame: dict[str, Any]) -> None:
        call_id = frame.get("toolCallId") or frame.get("id") or frame.get("tool_call_id")
        token = self.tokens.pop(str(call_id), None) if isinstance(call_id, str) else None
        if token is None:
            return  # not a call delivered to this socket: nothing to answer
        self.sent_at.pop(str(call_id), None)
        if not await self.credential_holds():
            return  # a stale socket's answer: not recorded, the call stays parked
        body = {
            "tool_call_id": call_id,
            "ok": frame.get("ok") is True,
            "result": frame.get("result"),
            "error": frame.get("error") if isinstance(frame.get("error"), str) else None,
            "delivery_token": token,
        }
        try:
            await sync_to_async(_deliver)(self.thread_id, body)
        except DomainError:
            return  # the thread went away or was terminated: the call cannot resume

    async def watch(self) -> None:
        liveness = settings.STUDIO_BRIDGE_LIVENESS_SECONDS
        timeout = settings.STUDIO_CLIENT_TOOL_TIMEOUT_SECONDS
        tick = max(0.2, min(liveness, timeout) / 4)
        while True:
            await asyncio.sleep(tick)
            if not self.sent_at:
                continue
            waiting = await sync_to_async(client_bridge.still_waiting)(
                self.thread_id, list(self.sent_at)
            )
            for call_id in list(self.sent_at):
                if call_id not in waiting:  # answered elsewhere (POST, stop, expiry)
                    self.sent_at.pop(call_id, None)
            if not self.sent_at:
                continue
            now = time.monotonic()
            oldest = min(self.sent_at.values())
            if now - self.last_seen > liveness or now - oldest > timeout:
                await self.close(code=CLOSE_UNRESPONSIVE)
                return


def _deliver(thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
    thread = Thread.objects.get(pk=thread_id)
    return client_bridge.deliver(thread, body)
