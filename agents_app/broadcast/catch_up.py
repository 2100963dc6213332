"""What a reply has streamed so far, for a socket that joins while it streams (issue #40 item 2).

Chunks are never stored in the database, and the channel layer has no history: a client
that (re)connects in the middle of a reply would see only what streams after it joined. So
the session's sink (``LiveSink``) also appends each frame of a streaming reply it publishes
to a per-thread Redis list, in the same pipelined write as the frame's ``PUBLISH`` and just
before it (``BatchPublisher.queue(..., before=ops)``): the reply's pending row, then each
chunk frame with its ``seq``, then a marker when the reply's row completes; the list is
deleted when the session's ``stopped`` frame goes out (and expires after ``TTL_SECONDS``
should the worker die).

A stream socket joins the thread's group first, then reads the list (``read``) and sends
one ``message_data`` per reply still streaming: its pending row with ``content`` = the text
so far (``catch_up: true``; ``reasoning_content`` too with ``reasoning=1``). Because each
list entry is written before its frame is published, every chunk frame the socket later
relays either is in what it read (same ``stream``, ``seq`` ≤ the highest it read: dropped)
or was published after the read (relayed): no text twice, none missing.

The in-memory layer (embedded mode) keeps the list in this process, where its sink and its
sockets both run. The core Redis layer (``CHANNEL_LAYER=core``) has no pipeline here: no
catch-up there (clients see a reply from where they joined, as before).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson

TTL_SECONDS = 3600
SUFFIX = "__streamed"

# An op is ("push", entry) or ("clear",): what to do to the group's list before its frame.
Op = tuple[Any, ...]


def ops_for(frame: dict[str, Any], tracked: set[str]) -> list[Op]:
    """The list ops for one stamped frame of a thread group (``tracked``: the ids of the
    replies whose rows were recorded, kept by the sink between calls)."""
    kind = frame.get("type")
    if kind in ("message_chunk", "reasoning_chunk"):
        message_id = str(frame.get("message_id"))
        if message_id not in tracked:
            return []
        entry = {"s": frame["seq"], "t": frame["stream"], "m": message_id}
        entry["r" if kind == "reasoning_chunk" else "c"] = frame.get("chunk") or ""
        return [("push", entry)]
    if kind == "message_data":
        data = frame.get("data") or {}
        message_id = str(frame.get("message_id") or data.get("id"))
        if data.get("status") == "pending":
            if data.get("role") != "assistant" or (data.get("metadata") or {}).get("queued"):
                return []
            tracked.add(message_id)
            row = {"s": frame["seq"], "t": frame["stream"], "m": message_id}
            return [("push", {**row, "d": frame.get("depth") or 0, "row": data}, TTL_SECONDS)]
        if message_id in tracked:
            tracked.discard(message_id)
            return [("push", {"s": frame["seq"], "t": frame["stream"], "m": message_id, "x": 1})]
        return []
    if kind == "stopped":
        tracked.clear()
        return [("clear",)]
    return []


def redis_commands(key: str, ops: list[Op]) -> list[tuple[Any, ...]]:
    commands: list[tuple[Any, ...]] = []
    for op in ops:
        if op[0] == "push":
            commands.append(("RPUSH", key, orjson.dumps(op[1])))
            if len(op) > 2:
                commands.append(("EXPIRE", key, op[2]))
        else:
            commands.append(("DEL", key))
    return commands


class _LocalLists:
    """The lists of the in-memory layer (sink and sockets share this process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lists: dict[str, list[bytes]] = defaultdict(list)

    def apply(self, group: str, ops: list[Op]) -> None:
        with self._lock:
            for op in ops:
                if op[0] == "push":
                    self._lists[group].append(orjson.dumps(op[1]))
                else:
                    self._lists.pop(group, None)

    def read(self, group: str) -> list[bytes]:
        with self._lock:
            return list(self._lists.get(group, ()))


local_lists = _LocalLists()


def is_local(layer: Any) -> bool:
    from channels.layers import InMemoryChannelLayer

    return isinstance(layer, InMemoryChannelLayer)


@dataclass
class Streaming:
    """One reply still streaming, as read by a joining socket."""

    row: dict[str, Any]
    depth: int
    stream: str
    seq: int
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


async def read(layer: Any, group: str) -> dict[str, Streaming]:
    """The replies of ``group`` still streaming, by message id (never raises: a failed read
    means no catch-up, as before)."""
    try:
        raw = await _read_raw(layer, group)
    except Exception:  # a catch-up is a nicety; the socket works without it
        import logging

        logging.getLogger(__name__).warning("catch-up of %s unread", group, exc_info=True)
        return {}
    replies: dict[str, Streaming] = {}
    for item in raw:
        entry = orjson.loads(item)
        message_id = entry["m"]
        if "row" in entry:
            replies[message_id] = Streaming(entry["row"], int(entry.get("d") or 0), entry["t"], 0)
        reply = replies.get(message_id)
        if reply is None:
            continue
        if entry.get("x"):
            del replies[message_id]
            continue
        reply.seq = max(reply.seq, int(entry["s"])) if entry["t"] == reply.stream else reply.seq
        if "c" in entry:
            reply.text.append(entry["c"])
        elif "r" in entry:
            reply.reasoning.append(entry["r"])
    return replies


async def _read_raw(layer: Any, group: str) -> list[bytes]:
    if is_local(layer):
        return local_lists.read(group)
    from channels_redis.pubsub import RedisPubSubChannelLayer, RedisPubSubLoopLayer

    if not isinstance(layer, RedisPubSubChannelLayer):
        return []
    loop_layer = layer._get_layer()
    if not isinstance(loop_layer, RedisPubSubLoopLayer):
        return []
    channel = loop_layer._get_group_channel_name(group)
    shard = loop_layer._get_shard(channel)
    shard._ensure_redis()
    items: list[bytes] = await shard._redis.lrange(channel + SUFFIX, 0, -1)
    return items


def catch_up_frame(message_id: str, reply: Streaming, reasoning: bool) -> dict[str, Any]:
    """The ``message_data`` a joining socket is sent for a reply still streaming."""
    data = {**reply.row, "content": "".join(reply.text)}
    if reasoning and reply.reasoning:
        data["reasoning_content"] = "".join(reply.reasoning)
    return {
        "type": "message_data",
        "message_id": message_id,
        "depth": reply.depth,
        "data": data,
        "catch_up": True,
    }
