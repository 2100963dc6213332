"""Two libraries on the relay's per-frame path do debug-log work with debug logging off.

A Daphne process holding sockets handles every frame of every watched thread twice
(the Pub/Sub message from Redis, the WebSocket frame to the browser). py-spy of the
sockets' Daphne at 200 streaming sessions (issue #21, thirteenth round) found ~8% of its
GIL time in work whose only purpose is a debug log line that is never written:

- **redis-py's push handler** (``handle_pubsub_push_response`` of the hiredis and RESP3
  async parsers) calls ``logging.getLogger`` (a lock) and ``str(response)`` of the whole
  message, payload included, for every Pub/Sub message, then logs it at DEBUG.
- **autobahn's ``sendData``** formats its debug arguments for every frame sent
  (``hltype``/``hlval``: ``inspect`` checks and ``click.style`` colouring, several
  string builds), and ``dataReceived`` does the same for every frame received.

``install()`` (called from ``studio.asgi``, so in the server processes) keeps both logs
and drops only the waste: the push handler checks the logger's level before it builds the
message (so ``push_response`` at DEBUG still logs every push), and autobahn's two
highlighters in its WebSocket modules return the same text without colour codes, which
costs a string build instead of a dozen calls.

**Twisted's write path.** A write to a TCP connection is buffered and the socket
registered with the event loop for writability; the loop's next turn sends it and
unregisters the socket: two ``epoll_ctl`` calls, a loop callback and a buffer join per
frame (~13% of the same process). ``install()`` also gives Twisted's server connections
the fast path asyncio's own transports have: when nothing is waiting to be sent, the
bytes go to the socket at once, and only what the socket does not take (or every write
while something is buffered, so the order holds) takes Twisted's buffered path. TLS
connections, connections with a producer, and connections closing keep Twisted's path
unchanged, and so does any error (the buffered path then reports it as Twisted does).
"""

from __future__ import annotations

import logging
from typing import Any

_push_log = logging.getLogger("push_response")


async def _push_response(self: Any, response: Any) -> Any:
    if _push_log.isEnabledFor(logging.DEBUG):
        _push_log.debug("Push response: %s", response)
    return response


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
    """Patch the three libraries in this process (idempotent)."""
    from autobahn.twisted import websocket as twisted_websocket
    from autobahn.websocket import protocol
    from redis._parsers.hiredis import _AsyncHiredisParser
    from redis._parsers.resp3 import _AsyncRESP3Parser

    # Instances bind the handler in __init__, so the class attribute is what new
    # connections pick up; connections made before install() keep the old one.
    for parser in (_AsyncHiredisParser, _AsyncRESP3Parser):
        parser.handle_pubsub_push_response = _push_response  # type: ignore[method-assign,assignment]
    for module in (protocol, twisted_websocket):
        if hasattr(module, "hltype"):
            module.hltype = plain_type  # type: ignore[attr-defined]
        if hasattr(module, "hlval"):
            module.hlval = plain_value  # type: ignore[attr-defined]
    from twisted.internet import tcp

    if not hasattr(tcp.Server.write, "buffered_write"):
        tcp.Server.write = send_now_or_buffer(tcp.Server.write)  # type: ignore[method-assign]
