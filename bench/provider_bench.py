"""How long the adapters take per streamed chunk, from the socket to the caller.

For each vendor, one real recorded stream is amplified to 2,000 delta events
(the recording's first delta repeated, then its real ending) and served by a
local HTTP server on 127.0.0.1, every event in its own HTTP chunk. The adapter
parses it as in production (httpx → SSE decoder → vendor parser → events) and
we time the whole request, then divide by the number of chunks.

    .venv/bin/python bench/provider_bench.py [--chunks 2000] [--runs 7] [--smoke]

Reads the fixtures from ../shared/fixtures/providers (or $PROVIDER_FIXTURES).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime.providers.adapter import HTTPAdapter  # noqa: E402
from runtime.providers.anthropic.provider import AnthropicProvider  # noqa: E402
from runtime.providers.base import ProviderRequest, TextDelta  # noqa: E402
from runtime.providers.google.provider import GoogleProvider  # noqa: E402
from runtime.providers.openai.chat_completions import OpenAIProvider  # noqa: E402
from runtime.providers.openrouter.provider import OpenRouterProvider  # noqa: E402
from tests.runtime.providers import recordings  # noqa: E402

KEY = "sk-bench"


def split_events(body: bytes) -> list[bytes]:
    """The SSE events of a body (blank-line separated, CRLF or LF), separators kept."""
    sep = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
    return [part + sep for part in body.split(sep) if part.strip()]


def amplify(events: list[bytes], is_delta: Callable[[bytes], bool], total: int) -> list[bytes]:
    """Head events up to the first delta, that delta repeated, then the recording's ending."""
    first = next(i for i, e in enumerate(events) if is_delta(e))
    last = max(i for i, e in enumerate(events) if is_delta(e))
    head, delta, tail = events[:first], events[first], events[last + 1 :]
    return head + [delta] * (total - len(head) - len(tail)) + tail


def streams(total: int) -> dict[str, tuple[type[HTTPAdapter], str, list[bytes]]]:
    openai = recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")[1].body
    openrouter = recordings.raw("openrouter/chat_stream_reasoning.sse")
    anthropic = recordings.cassette("anthropic/messages_stream_text.yaml")[0].body
    gemini = recordings.cassette("gemini/stream_function_call_roundtrip.yaml")[2].body
    return {
        "openai": (
            OpenAIProvider,
            "/v1",
            amplify(
                split_events(openai),
                lambda e: b'"content":"' in e and b'"content":""' not in e,
                total,
            ),
        ),
        "openrouter": (
            OpenRouterProvider,
            "/api/v1",
            amplify(split_events(openrouter), lambda e: b'"reasoning":"' in e, total),
        ),
        "anthropic": (
            AnthropicProvider,
            "/v1",
            amplify(split_events(anthropic), lambda e: b"text_delta" in e, total),
        ),
        "google": (
            GoogleProvider,
            "/v1beta",
            amplify(split_events(gemini), lambda e: b"finishReason" not in e, total),
        ),
    }


class OneShotServer:
    """Answers every POST with one pre-encoded chunked response (sent with one sendall)."""

    def __init__(self, events: list[bytes]) -> None:
        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        body = b"".join(f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events)
        self.payload = head + body + b"0\r\n\r\n"
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                _read_request(conn)
                conn.sendall(self.payload)

    def close(self) -> None:
        self.sock.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(rest) < length:
        rest += conn.recv(65536)


async def one_run(adapter: HTTPAdapter) -> tuple[float, int]:
    request = ProviderRequest(
        model="bench-model", system="", messages=[{"role": "user", "content": "hi"}]
    )
    deltas = 0

    def callback(event: object) -> None:
        nonlocal deltas
        if isinstance(event, TextDelta) or type(event).__name__ == "ReasoningDelta":
            deltas += 1

    started = time.perf_counter()
    async for event in adapter.stream(request):
        callback(event)
    return time.perf_counter() - started, deltas


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args(argv)
    if args.smoke:  # enough chunks for every recording's head and ending around the deltas
        args.chunks, args.runs = 50, 1
    asyncio.run(run(args.chunks, args.runs))


async def run(chunks: int, runs: int) -> None:
    print(f"{chunks} chunks per stream, median of {runs} runs (after one warm-up)")
    print(f"{'vendor':<12}{'µs/chunk':>10}{'total ms':>10}{'deltas':>8}")
    async with httpx.AsyncClient(timeout=30) as client:
        for vendor, (cls, prefix, events) in streams(chunks).items():
            server = OneShotServer(events)
            adapter = cls(client, KEY, f"http://127.0.0.1:{server.port}{prefix}")
            await one_run(adapter)  # warm-up: connection setup, imports, caches
            timings = []
            for _ in range(runs):
                seconds, deltas = await one_run(adapter)
                timings.append(seconds)
            server.close()
            median = statistics.median(timings)
            print(
                f"{vendor:<12}{median / len(events) * 1e6:>10.1f}{median * 1e3:>10.1f}{deltas:>8}"
            )


if __name__ == "__main__":
    main()
