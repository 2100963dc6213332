"""A stream socket opened while a reply streams is sent the text so far, then the rest
(issue #40 item 2), on the test settings' channel layer (in-memory: the embedded path)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from agents_app.broadcast.events import ChunkPacer, LiveSink
from studio.asgi import application
from tests.agents_app.sockets.test_api_consumers import _thread_and_key

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


def _row(message_id: str, status: str, content: str | None = None) -> dict[str, Any]:
    return {
        "type": "message_data",
        "message_id": message_id,
        "depth": 0,
        "data": {"id": message_id, "role": "assistant", "status": status, "content": content},
    }


def _chunk(message_id: str, text: str) -> dict[str, Any]:
    return {"type": "message_chunk", "message_id": message_id, "depth": 0, "chunk": text}


async def _frames_until_completed(socket: WebsocketCommunicator) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = json.loads(await socket.receive_from(timeout=5))
        frames.append(frame)
        if frame["type"] == "message_data" and frame["data"]["status"] == "completed":
            return frames


async def test_a_socket_joining_mid_reply_gets_the_text_so_far_then_the_rest() -> None:
    thread_id, key = await _thread_and_key("alice", "alice")
    reply = str(uuid.uuid4())
    sink = LiveSink(pacer=ChunkPacer(budget=0), window=0)
    sink.emit(thread_id, _row(reply, "pending"))
    for word in ("Hello", " there", ","):
        sink.emit(thread_id, _chunk(reply, word))
    await sink.flush()

    socket = WebsocketCommunicator(
        application,
        f"/api/threads/{thread_id}/stream",
        headers=[(b"authorization", f"Bearer {key}".encode())],
    )
    assert (await socket.connect())[0]
    first = json.loads(await socket.receive_from(timeout=5))
    assert first["type"] == "message_data" and first["catch_up"] is True
    assert first["data"]["status"] == "pending" and first["data"]["content"] == "Hello there,"

    for word in (" how", " are you?"):
        sink.emit(thread_id, _chunk(reply, word))
    sink.emit(thread_id, _row(reply, "completed", "Hello there, how are you?"))
    await sink.flush()
    later = await _frames_until_completed(socket)
    chunks = "".join(f["chunk"] for f in later if f["type"] == "message_chunk")
    assert first["data"]["content"] + chunks == "Hello there, how are you?"

    # Once the reply completed, a new socket is sent no catch-up: its row is stored.
    sink.emit(thread_id, {"type": "stopped", "reason": "completed"})
    await sink.flush()
    again = WebsocketCommunicator(
        application,
        f"/api/threads/{thread_id}/stream",
        headers=[(b"authorization", f"Bearer {key}".encode())],
    )
    assert (await again.connect())[0]
    assert await again.receive_nothing(timeout=0.3)
    await socket.disconnect()
    await again.disconnect()
