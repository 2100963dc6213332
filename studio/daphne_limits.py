"""Daphne's own limits answer in JSON, like every other error.

Twisted (under Daphne) cuts a request line or header line over 16 KB by closing
the connection with no reply, and answers other malformed requests with a bare
``400``. Clients then see an empty reply instead of a reason. ``install()`` (called
from ``studio.asgi``, so only in the Daphne process) replaces both answers with a
``{"error": …}`` JSON response: 414 for an overlong request line, 431 for an
overlong header, 400 otherwise.
"""

from __future__ import annotations

import json
from typing import Any

from agents_app.web.url_length import url_too_long

LINE_LIMIT = 16384  # twisted.protocols.basic.LineReceiver.MAX_LENGTH


def _response(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def _line_too_long(channel: Any, line: bytes) -> None:
    # Still on the first line: the request line (and so the URL) is what is too long.
    if getattr(channel, "_HTTPChannel__first_line", 0):
        answer = _response(414, "URI Too Long", url_too_long(LINE_LIMIT))
    else:
        answer = _response(431, "Request Header Fields Too Large", "Request header too large")
    channel.transport.write(answer)
    channel.loseConnection()


def _bad_request(channel: Any) -> None:
    channel.transport.write(_response(400, "Bad Request", "Malformed or oversized HTTP request"))
    channel.loseConnection()


def install() -> None:
    from twisted.web import http

    http.HTTPChannel.lineLengthExceeded = _line_too_long  # type: ignore[method-assign,assignment]
    http.HTTPChannel._respondToBadRequestAndDisconnect = _bad_request  # type: ignore[method-assign,assignment]
