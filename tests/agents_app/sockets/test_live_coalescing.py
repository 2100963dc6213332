"""Token chunks coalesced per thread (``STUDIO_STREAM_COALESCE_MS``, issue #21) reach a
joined socket with the same text, in the same order, around the same other frames.

Real parts: the configured channel layer, the real ``ThreadStreamConsumer`` behind the
ASGI application (authentication, thread check, filters, redaction) and the real
``LiveSink``. Counts and contents only, no timing thresholds: the window decides how
many frames, never what they say.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest

from agents_app.broadcast.events import ChunkPacer, LiveSink
from agents_app.broadcast.live_frames import frame_meta, live_event, text_of
from runtime.store.events import message_chunk, telemetry
from tests.agents_app.sockets.test_api_consumers import _connect, _received, _thread_and_key

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

TOKENS = [f"token{i} " for i in range(40)]
CHUNK_KEYS = {"type", "message_id", "depth", "chunk", "seq", "stream"}


def _row(status: str) -> dict[str, Any]:
    data = {"id": "m1", "role": "assistant", "status": status, "content": None, "silent": False}
    if status == "completed":
        data["content"] = "".join(TOKENS)
    return {"type": "message_data", "message_id": "m1", "depth": 0, "data": data}


async def _stream_through(window: float) -> list[dict[str, Any]]:
    """One reply streamed by a ``LiveSink`` with ``window`` seconds, as a socket saw it."""
    thread_id, key = await _thread_and_key("alice", "alice")
    socket = await _connect(f"/api/threads/{thread_id}/stream", key)
    # No process-wide pacing here: only the window (or its absence) merges chunks.
    sink = LiveSink(pacer=ChunkPacer(budget=0), window=window)
    sink.emit(thread_id, _row("pending"))
    for token in TOKENS:
        sink.emit(thread_id, message_chunk("m1", 0, token))
        await asyncio.sleep(0.005)  # a provider's pace: tokens arrive faster than the window
    sink.emit(thread_id, telemetry("llm_response", tokens=len(TOKENS), latency=1))
    sink.emit(thread_id, _row("completed"))
    await sink.flush()
    frames = await _received(socket)
    await socket.disconnect()
    return frames


def _without_numbers(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in f.items() if k not in ("seq", "stream", "timestamp")}
        for f in frames
        if f["type"] != "message_chunk"
    ]


async def test_coalesced_chunks_reach_a_joined_socket_with_the_same_text_in_order() -> None:
    frames = await _stream_through(window=0.2)
    kinds = [f["type"] for f in frames]
    chunks = [f for f in frames if f["type"] == "message_chunk"]
    assert "".join(f["chunk"] for f in chunks) == "".join(TOKENS)
    # Fewer frames than tokens (the window merged them), all between the two rows.
    assert 1 <= len(chunks) < len(TOKENS)
    assert kinds[0] == "message_data" and kinds[-1] == "message_data"
    assert kinds.index("llm_response") > max(i for i, k in enumerate(kinds) if k == "message_chunk")
    # The documented shapes, numbered without gaps.
    assert all(set(f) == CHUNK_KEYS for f in chunks)
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))


async def test_coalescing_changes_how_many_frames_never_what_they_say() -> None:
    merged = await _stream_through(window=0.2)
    plain = await _stream_through(window=0)
    text = [
        "".join(f["chunk"] for f in run if f["type"] == "message_chunk") for run in (merged, plain)
    ]
    assert text[0] == text[1] == "".join(TOKENS)
    assert _without_numbers(merged) == _without_numbers(plain)
    assert len([f for f in merged if f["type"] == "message_chunk"]) < len(
        [f for f in plain if f["type"] == "message_chunk"]
    )


def test_a_frame_is_encoded_once_as_the_json_of_the_frame() -> None:
    frame = {
        "type": "message_data",
        "message_id": "m",
        "depth": 0,
        "data": {"content": 'naïve \u2603 "quoted"', "silent": True},
        "seq": 3,
        "stream": "s",
    }
    event = live_event(frame)
    assert json.loads(event["text"]) == frame == orjson.loads(text_of(event))
    assert event["meta"] == {
        "type": "message_data",
        "seq": 3,
        "stream": "s",
        "depth": 0,
        "silent": True,
    }
    # An older sender's shape (a whole frame) reads the same.
    assert text_of({"type": "thread.frame", "frame": frame}) == event["text"]
    assert frame_meta(frame) == event["meta"]
