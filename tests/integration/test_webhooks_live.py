"""Outbound webhooks on the production topology (docs/automation.md, "Webhooks"): sessions
run on a real Celery worker (with its beat, which sends the retries), deliveries reach real
local HTTP receivers started here, signatures verify, a receiver answering 500 three times
gets the fourth attempt, and nothing is delivered twice.

The delivery latency (the session's end → the receiver's first request) is printed for the
notes; no assertion holds a time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import statistics
import threading
import time
from collections import Counter
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.integration.stack import Stack, wait_until
from tests.integration.test_live_sessions import new_thread, post

pytestmark = pytest.mark.integration

SECRET = "live-webhook-secret"
SESSIONS = 12


class Receiver(ThreadingHTTPServer):
    """Records every request; answers 500 to the first ``refusals`` attempts of each
    delivery (by ``Webhook-Id``), then 200."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.requests: list[tuple[float, dict[str, str], bytes, int]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Answer)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/hook"

    def by_id(self) -> Counter[str]:
        return Counter(h["Webhook-Id"] for _, h, _, _ in self.requests)


class _Answer(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = dict(self.headers)
        with self.server.lock:
            seen = sum(
                1 for _, h, _, _ in self.server.requests if h["Webhook-Id"] == headers["Webhook-Id"]
            )
            code = 500 if seen < self.server.refusals else 200
            self.server.requests.append((time.time(), headers, body, code))
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _verified(headers: dict[str, str], body: bytes) -> bool:
    stamp = headers["Webhook-Timestamp"]
    mac = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"v1={mac}", headers["Webhook-Signature"])


def _subscribe(stack: Stack, url: str) -> str:
    answer = stack.client("ops").post(
        "/api/webhooks",
        json={
            "url": url,
            "secretEnv": "LIVE_HOOK_SECRET",
            "events": ["session.finished"],
            "agent": "greeter",
        },
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_deliveries_are_signed_retried_to_the_fourth_attempt_and_never_duplicated(
    stack: Stack, worker: Any
) -> None:
    worker(
        "w-hooks",
        beat=True,
        env={"STUDIO_WEBHOOK_RETRY_BASE_SECONDS": "1", "STUDIO_WEBHOOK_SWEEP_SECONDS": "1"},
    )
    answer = stack.client("ops").patch(
        "/api/envs/instance", json={"env_patch": {"LIVE_HOOK_SECRET": SECRET}}
    )
    assert answer.status_code == 200, answer.text
    prompt, refusing = Receiver(refusals=0), Receiver(refusals=3)
    subscriptions = [_subscribe(stack, prompt.url), _subscribe(stack, refusing.url)]
    try:
        threads = []
        for i in range(SESSIONS):
            thread_id = new_thread(stack, "greeter")
            post(stack, thread_id, f"hello {i}")
            threads.append(thread_id)
        wait_until(lambda: len(prompt.by_id()) == SESSIONS, "one delivery per session", timeout=90)
        wait_until(
            lambda: sorted(refusing.by_id().values()) == [4] * SESSIONS,
            "the fourth attempt of every refused delivery",
            timeout=120,
        )
        for subscription in subscriptions:
            wait_until(
                lambda s=subscription: (
                    {
                        d["status"]
                        for d in stack.client("ops")
                        .get(f"/api/webhooks/{s}/deliveries")
                        .json()["deliveries"]
                    }
                    == {"delivered"}
                ),
                "every delivery marked delivered",
            )
    finally:
        for subscription in subscriptions:
            stack.client("ops").delete(f"/api/webhooks/{subscription}")
        prompt.shutdown()
        refusing.shutdown()
    # Nothing twice: one request per delivery to the receiver that took it at once, four
    # (500, 500, 500, 200) to the one that refused three times; one delivery per session.
    assert set(prompt.by_id().values()) == {1}
    for delivery in refusing.by_id():
        codes = [c for _, h, _, c in refusing.requests if h["Webhook-Id"] == delivery]
        assert codes == [500, 500, 500, 200]
    for receiver in (prompt, refusing):
        assert all(_verified(h, body) for _, h, body, _ in receiver.requests)
        payloads = {json.loads(body)["threadId"] for _, _, body, _ in receiver.requests}
        assert payloads == set(threads)
        # Every attempt of one delivery carries the same body (the same event, re-signed).
        bodies: dict[str, set[bytes]] = {}
        for _, h, body, _ in receiver.requests:
            bodies.setdefault(h["Webhook-Id"], set()).add(body)
        assert {len(b) for b in bodies.values()} == {1}
    ended = {
        str(thread): finished
        for thread, finished in stack.sql(
            "SELECT thread_id::text, max(ended_at) FROM agents_app_threadsession"
            " WHERE thread_id::text = ANY(%s) GROUP BY thread_id",
            threads,
        )
    }
    latency = sorted(
        (at - ended[json.loads(body)["threadId"]].timestamp()) * 1000
        for at, _, body, _ in prompt.requests
        if isinstance(ended.get(json.loads(body)["threadId"]), datetime)
    )
    if latency:
        print(
            f"\nwebhook delivery latency (session end → receiver), {len(latency)} sessions:"
            f" p50 {statistics.median(latency):.0f} ms, max {latency[-1]:.0f} ms"
        )
