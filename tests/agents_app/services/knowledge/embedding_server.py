"""A real HTTP server on loopback that answers in OpenAI's and Gemini's embeddings shapes.

No recorded embeddings transcript exists in /work/shared/fixtures/providers/, so the answers
are built from the vendors' documented shapes: OpenAI's ``POST /v1/embeddings`` →
``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
"usage": {"prompt_tokens", "total_tokens"}}``; Gemini's ``POST
/v1beta/models/{model}:batchEmbedContents`` → ``{"embeddings": [{"values"}]}``. The vectors
are word hashes (a bag of words in 64 dimensions), so a query shares direction with the
passages that share its words, enough for a search to find the right one.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSIONS = 64


def word_vector(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector if any(vector) else [1.0] + [0.0] * (DIMENSIONS - 1)


@dataclass
class Seen:
    """What the server received: each request's path, headers and body."""

    requests: list[dict[str, Any]] = field(default_factory=list)


def _handler(seen: Seen) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"] or 0)))
            seen.requests.append(
                {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
            )
            if self.path.endswith("/embeddings"):
                texts = body["input"]
                answer: dict[str, Any] = {
                    "object": "list",
                    "data": [
                        {"object": "embedding", "index": i, "embedding": word_vector(t)}
                        for i, t in enumerate(texts)
                    ],
                    "model": body["model"],
                    "usage": {"prompt_tokens": 10 * len(texts), "total_tokens": 10 * len(texts)},
                }
            elif self.path.endswith(":batchEmbedContents"):
                texts = [r["content"]["parts"][0]["text"] for r in body["requests"]]
                answer = {"embeddings": [{"values": word_vector(t)} for t in texts]}
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def embedding_server() -> Iterator[tuple[str, Seen]]:
    """``(base address, what it saw)`` while the server runs."""
    seen = Seen()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(seen))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
