"""A real HTTP server on 127.0.0.1 that answers with queued, recorded responses.

The adapters talk to it over a socket exactly as they would to a vendor: real
status lines, headers, chunked transfer encoding, and connections that die
mid-body when a test asks for a cut stream. Every request is recorded (method,
path, headers, body) so tests can check what went on the wire.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One canned response.

    ``chunks`` streams the body with chunked transfer encoding, one write per
    chunk; ``cut`` drops the connection after the chunks without the final
    zero-length chunk (a stream cut mid-way); ``delay`` waits before the status
    line, ``chunk_delay`` between chunks.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: list[bytes] | None = None
    cut: bool = False
    delay: float = 0.0
    chunk_delay: float = 0.0

    @classmethod
    def json(cls, payload: Any, status: int = 200, **headers: str) -> Reply:
        return cls(
            status, {"content-type": "application/json", **headers}, json.dumps(payload).encode()
        )

    def cut_after(self, count: int) -> Reply:
        """This streamed reply, dropped after ``count`` chunks (no terminating chunk)."""
        assert self.chunks is not None, "only streamed replies can be cut"
        return dataclasses.replace(self, chunks=self.chunks[:count], cut=True)

    @classmethod
    def sse(cls, body: bytes, chunk_size: int | None = 97, **options: Any) -> Reply:
        """An event stream split into odd-sized chunks (lines and CRLFs get split)."""
        size = chunk_size or len(body) or 1
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        return cls(200, {"content-type": "text/event-stream"}, chunks=chunks, **options)


@dataclass
class Recorded:
    """A request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.replay.requests.append(Recorded(self.command, self.path, headers, body))
        reply = self.server.replay.next_reply()
        if reply.delay:
            time.sleep(reply.delay)
        if reply.chunks is None:
            self._send_whole(reply)
        else:
            self._send_chunked(reply)

    # Model listings (GET /models) are answered from the same queue.
    do_GET = do_POST  # noqa: N815

    def _send_whole(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def _send_chunked(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in reply.chunks or []:
            if reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        if reply.cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    replay: ReplayServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or give up hang up on purpose in these tests.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ReplayServer:
    """Serves queued ``Reply`` objects in order; 500 when the queue is empty."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.replay = self
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: Reply) -> ReplayServer:
        with self._lock:
            self._replies.extend(replies)
        return self

    def next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return Reply.json({"error": {"message": "replay server: no reply queued"}}, status=500)

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
