"""A thread frame on the channel layer: encoded once where it is sent, relayed as text.

A ``thread.frame`` layer message carries the frame already encoded as JSON (``text``,
orjson, compact) and the few fields a consumer decides on (``meta``: type, seq,
stream, depth, silent, eventType). A Daphne process then sends the same text to every
socket of the thread's group; no consumer decodes or re-encodes the frame, and the
frame is serialized once in all (msgpack only wraps the string for Redis).

The batch publisher sends a group's frames that are ready together as one
``thread.frames`` message (``{"events": [...]}``, each a ``thread.frame`` message): one
message for Redis and for each Daphne instead of one per frame (a step sends about 13).
Consumers (``sockets.consumers._RelayDispatch``) relay its events in order. In a rolling
deploy, upgrade the web processes before the workers: an older consumer has no handler
for ``thread.frames``.

Older senders (a worker not yet upgraded during a rolling deploy) send
``{"frame": {...}}``; ``meta_of``, ``text_of`` and ``frame_of`` read both shapes.
"""

from __future__ import annotations

from typing import Any

import orjson

THREAD_FRAME = "thread.frame"
# Several thread frames of one group in one layer message, in order (``frames_event``).
THREAD_FRAMES = "thread.frames"


def encode(frame: dict[str, Any]) -> str:
    """The frame's JSON text (compact; non-ASCII as UTF-8, the same JSON value as before)."""
    return orjson.dumps(frame).decode()


def frame_meta(frame: dict[str, Any]) -> dict[str, Any]:
    """What a consumer reads to filter, order and route a frame, without decoding it."""
    meta: dict[str, Any] = {"type": frame.get("type")}
    for key in ("seq", "stream", "depth", "eventType"):
        if key in frame:
            meta[key] = frame[key]
    if frame.get("type") == "message_data":
        data = frame.get("data")
        meta["silent"] = bool(isinstance(data, dict) and data.get("silent"))
    return meta


def live_event(frame: dict[str, Any]) -> dict[str, Any]:
    """The layer message for one (already stamped) frame."""
    return {"type": THREAD_FRAME, "text": encode(frame), "meta": frame_meta(frame)}


def frames_event(events: list[dict[str, Any]]) -> dict[str, Any]:
    """One layer message for a group's ``thread.frame`` messages, in order (one alone is
    sent as it is). Consumers relay its events one by one, as if each had come alone."""
    return events[0] if len(events) == 1 else {"type": THREAD_FRAMES, "events": events}


def meta_of(event: dict[str, Any]) -> dict[str, Any]:
    meta = event.get("meta")
    return meta if isinstance(meta, dict) else frame_meta(event["frame"])


def text_of(event: dict[str, Any]) -> str:
    text = event.get("text")
    return text if isinstance(text, str) else encode(event["frame"])


def frame_of(event: dict[str, Any]) -> dict[str, Any]:
    """The frame itself (decoded; for the rare consumer that rewrites one, and tests)."""
    frame = event.get("frame")
    if isinstance(frame, dict):
        return frame
    decoded: dict[str, Any] = orjson.loads(event["text"])
    return decoded
