"""Library work on the relay's per-frame path that serves nothing we use.

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
frame (~18% of the same process with the send itself). ``install()`` also gives
Twisted's server connections the fast path asyncio's own transports have: when nothing is
waiting to be sent, the bytes go to the socket at once, and only what the socket does not
take (or every write while something is buffered, so the order holds) takes Twisted's
buffered path, which pauses a streaming producer once its buffer is full. TLS connections,
connections with a pull producer or a paused streaming one (Twisted's HTTP channel
registers itself as a streaming producer on every connection, sockets included), and
connections closing keep Twisted's path unchanged, and so does any error (the buffered
path then reports it as Twisted does).

**channels_redis' receive loop** asks redis-py for each Pub/Sub message with a 0.1 s
timeout, so every message arms and disarms an ``asyncio.timeout`` (~6%). The worker
publishes a batch of frames in one pipeline, so they arrive together and hiredis has
parsed the rest of a batch by the time the first is handed over. ``install()`` replaces
the loop with the same loop that, after each message, takes the replies hiredis already
holds without a timeout (they are there: no wait), then waits with the timeout again.
With the pure-Python parser (no hiredis) nothing is drained and it is the library's loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

_push_log = logging.getLogger("push_response")
_layer_log = logging.getLogger("channels_redis.pubsub")  # the library's own logger


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


def reply_waiting(pubsub: Any) -> bool:
    """Whether hiredis holds bytes of a reply not handed over yet (no read needed)."""
    reader = getattr(getattr(pubsub.connection, "_parser", None), "_reader", None)
    return reader is not None and bool(reader.has_data())


async def _receive_drained(self: Any) -> None:
    # channels_redis 4.x RedisSingleShardConnection._do_receiving, plus the inner drain.
    while True:
        try:
            if self._pubsub and self._pubsub.subscribed:
                message = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=0.1
                )
                self._receive_message(message)
                while self._pubsub.subscribed and reply_waiting(self._pubsub):
                    message = await self._pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=None
                    )
                    self._receive_message(message)
            else:
                await asyncio.sleep(0.1)
        except (TimeoutError, asyncio.CancelledError, GeneratorExit):
            raise
        except BaseException:
            _layer_log.exception("Unexpected exception in receive task")
            await asyncio.sleep(1)


# The versions these patches were written and measured against (docs/operating.md,
# thirteenth and fourteenth rounds: push handler and highlighters ~8% of the sockets'
# Daphne at 200 sessions, Twisted's write path ~18%, the receive loop ~6%). They reach into
# private names, so an upgrade is a conscious step: tests/agents_app/test_relay_hot_path.py
# fails when an installed version differs; re-read the patched code, re-run the bench, then
# update this table.
PATCHED_FOR = {
    "twisted": "26.10.0",
    "autobahn": "26.10.2",
    "redis": "8.1.0",
    "channels_redis": "4.3.0",
}


def install() -> None:
    """Patch the four libraries in this process (idempotent)."""
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
    from channels_redis.pubsub import RedisSingleShardConnection

    RedisSingleShardConnection._do_receiving = _receive_drained  # type: ignore[method-assign]
    from twisted.internet import tcp

    if not hasattr(tcp.Server.write, "buffered_write"):
        tcp.Server.write = send_now_or_buffer(tcp.Server.write)  # type: ignore[method-assign]
