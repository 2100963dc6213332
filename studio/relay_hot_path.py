"""Library work on the relay's per-frame path that serves nothing we use.

A Daphne process holding sockets handles every frame of every watched thread twice
(the Pub/Sub message from Redis, the WebSocket frame to the browser). py-spy of the
sockets' Daphne at 200 streaming sessions (issue #21, thirteenth round) found part of its
GIL time in work whose only purpose is a debug log line that is never written:

- **autobahn's ``sendData``** formats its debug arguments for every frame sent
  (``hltype``/``hlval``: ``inspect`` checks and ``click.style`` colouring, several
  string builds), and ``dataReceived`` does the same for every frame received.

``install()`` (called from ``studio.asgi``, so in the server processes) keeps the log and
drops only the waste: autobahn's two highlighters in its WebSocket modules return the same
text without colour codes, which costs a string build instead of a dozen calls.

**Twisted's write path.** A write to a TCP connection is buffered and the socket
registered with the event loop for writability; the loop's next turn sends it and
unregisters the socket: two ``epoll_ctl`` calls, a loop callback and a buffer join per
frame (~18% of the same process with the send itself). ``install()`` also gives
Twisted's server connections the fast path asyncio's own transports have: when nothing is
waiting to be sent, the bytes go to the socket at once, and only what the socket does not
take (or every write while something is buffered, so the order holds) takes Twisted's
buffered path, which pauses a streaming producer once its buffer is full. TLS connections,
connections with a pull producer or a paused streaming one (Twisted's HTTP channel
registers itself as a streaming producer on every connection, sockets included), and
connections closing keep Twisted's path unchanged, and so does any error (the buffered
path then reports it as Twisted does).

**Kept only where the service bench shows it** (issue #37; docs/scaling.md, "Library
patches measured one by one"): each patch below names the version it was written for in
``PATCHES``, and ``tests/agents_app/sockets/test_relay_hot_path.py`` fails when the installed
version differs, so an upgrade is a conscious step. Two earlier patches were dropped: with
either off, the sockets' Daphne spent the same per frame within the runs' noise (on: 73, 70,
68 µs; without the drain: 69, 76, 70; without the push handler: 74, 75, 68):

- channels_redis' receive loop, which took a batch's already-parsed Pub/Sub messages
  without a 0.1 s ``asyncio.timeout`` each (alone: 10.7 → 7.2 µs per message);
- redis-py's Pub/Sub push handler, which builds ``str()`` of every message for a DEBUG line
  even with debug logging off (alone: 3.02 → 0.22 µs per message). Fixed upstream after
  8.1.0: https://github.com/redis/redis-py/issues/4230, merged as
  https://github.com/redis/redis-py/pull/4231, so it goes with the next upgrade anyway.
"""

from __future__ import annotations

from typing import Any

# patch -> (the distribution it reaches into, the version it was written and measured for).
# Re-read the patched code and re-run bench/service_bench.py before moving a pin.
PATCHES: dict[str, tuple[str, str]] = {
    "plain highlighters": ("autobahn", "26.10.2"),
    "send at once": ("twisted", "26.10.0"),
}


# Patch "plain highlighters". The sockets' Daphne at 200 sessions (bench/service_bench.py
# --edge --levels 200, issue #37; 2 cores shared with other work, load average 2-5): 79, 78,
# 71 µs of CPU per frame without it against 73, 70, 68 with it (81 in a fourth, loaded round
# against 68, 64); alone, 4.63 µs per frame sent for sendData's three debug arguments against 0.52 µs.
# No upstream issue or pull request found for autobahn's eager debug arguments (searched the
# crossbario/autobahn-python tracker, November 2026); none sent from here.
def plain_type(obj: Any) -> str:
    """autobahn's ``hltype`` without colour: ``<module.Qualified.name>``."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None)
    return f"<{module}.{name}>" if module and name else "<unknown>"


def plain_value(val: Any, color: str = "white", bold: bool = True) -> str:
    """autobahn's ``hlval`` without colour."""
    return f"{val}"


def _buffered(connection: Any) -> bool:
    return bool(connection._tempDataBuffer) or connection.offset < len(connection.dataBuffer)


# Patch "send at once". The same bench: 84, 82, 90 µs per frame without it against 73, 70, 68
# (a fifth of the relay's CPU per frame).
def send_now_or_buffer(buffered_write: Any) -> Any:
    """A ``write`` for Twisted's ``tcp.Server`` that sends at once when it can."""

    def write(self: Any, data: bytes) -> None:
        if (
            type(data) is bytes
            and data
            and not self.TLS
            and self.connected
            and not self.disconnecting
            and not self._writeDisconnected
            and (self.producer is None or (self.streamingProducer and not self.producerPaused))
            and not _buffered(self)
        ):
            try:
                sent = self.socket.send(data)
            except OSError:  # would block, or broken: the buffered path handles both
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
        buffered_write(self, data)

    write.buffered_write = buffered_write  # type: ignore[attr-defined]
    return write


def install() -> None:
    """Patch the two libraries in this process (idempotent)."""
    from autobahn.twisted import websocket as twisted_websocket
    from autobahn.websocket import protocol

    for module in (protocol, twisted_websocket):
        if hasattr(module, "hltype"):
            module.hltype = plain_type  # type: ignore[attr-defined]
        if hasattr(module, "hlval"):
            module.hlval = plain_value  # type: ignore[attr-defined]
    from twisted.internet import tcp

    if not hasattr(tcp.Server.write, "buffered_write"):
        tcp.Server.write = send_now_or_buffer(tcp.Server.write)  # type: ignore[method-assign]
