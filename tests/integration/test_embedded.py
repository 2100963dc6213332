"""Embedded mode end to end: no Redis, no Celery. Daphne on SQLite runs sessions on its own
event loop (the in-process executor) and streams through the in-memory channel layer."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from tests.integration.stack import (
    DAPHNE,
    ROOT,
    Process,
    free_port,
    sqlite_database,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    import subprocess

    tmp = tmp_path_factory.mktemp("embedded")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "DATABASE_URL", "STUDIO_EXECUTOR", "TEST_DB_NAME")
    }
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "studio.settings",
            "STUDIO_VAR_DIR": str(tmp / "var"),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            # The automation test's receiver listens on loopback (egress policy); retries come within seconds.
            "STUDIO_EGRESS_ALLOW": "127.0.0.1",
            "STUDIO_WEBHOOK_RETRY_BASE_SECONDS": "1",
            "STUDIO_WEBHOOK_SWEEP_SECONDS": "1",
            # The test watches a schedule run every second (production's shortest is 60 s).
            "STUDIO_SCHEDULE_MIN_INTERVAL_SECONDS": "1",
        }
    )
    # Migrated and seeded once per set of migrations and code (a copy of the template).
    keys = sqlite_database(tmp / "var" / "studio.sqlite3", env, seeded=True)
    port = free_port()
    log = tmp / "daphne.log"
    popen = subprocess.Popen(
        [*DAPHNE, "-b", "127.0.0.1", "-p", str(port), "studio.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    process = Process("daphne-embedded", popen, Path(log))
    base = f"127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"http://{base}/api/auth/csrf", timeout=2).status_code == 200,
            "embedded Daphne to answer",
        )
        yield base, keys
    finally:
        process.stop()


def test_embedded_mode_runs_and_streams_a_session(embedded: tuple[str, dict[str, str]]) -> None:
    base, keys = embedded
    key = keys["alice"]
    headers = {"Authorization": f"Bearer {key}"}
    client = httpx.Client(base_url=f"http://{base}", headers=headers, timeout=30)
    thread_id = client.post("/api/threads", json={"agent_id": "greeter"}).json()["threadId"]
    frames = []
    with connect(f"ws://{base}/api/threads/{thread_id}/stream", additional_headers=headers) as ws:
        assert (
            client.post(f"/api/threads/{thread_id}/messages", json={"content": "hi"}).status_code
            == 202
        )
        while not frames or frames[-1]["type"] != "stopped":
            frames.append(json.loads(ws.recv(timeout=30)))
    reply = "".join(f["chunk"] for f in frames if f["type"] == "message_chunk")
    assert reply == "Hello Alice! How can I help you today?"
    stored = client.get(f"/api/threads/{thread_id}/messages").json()["messages"]
    assert [(m["role"], m["status"]) for m in stored] == [
        ("user", "completed"),
        ("assistant", "completed"),
    ]


class _Receiver(ThreadingHTTPServer):
    """A webhook receiver that refuses its first request (500) and takes the rest."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes, int]] = []
        super().__init__(("127.0.0.1", 0), _Answer)


class _Answer(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        code = 500 if not self.server.requests else 200
        self.server.requests.append((dict(self.headers), body, code))
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_embedded_mode_runs_schedules_and_retries_webhooks(
    embedded: tuple[str, dict[str, str]],
) -> None:
    """No beat in embedded mode: the server's own loop runs due schedules and sends the
    retry of a delivery its receiver refused (docs/automation.md, "Embedded mode")."""
    base, keys = embedded
    ops = httpx.Client(
        base_url=f"http://{base}", headers={"Authorization": f"Bearer {keys['ops']}"}, timeout=30
    )
    receiver = _Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        secret = "embedded-signing-secret"
        answer = ops.patch("/api/envs/instance", json={"env_patch": {"HOOK_SECRET": secret}})
        assert answer.status_code == 200, answer.text
        answer = ops.post(
            "/api/webhooks",
            json={
                "url": f"http://127.0.0.1:{receiver.server_port}/hook",
                "secretEnv": "HOOK_SECRET",
                "events": ["session.finished"],
                "agent": "greeter",
            },
        )
        assert answer.status_code == 201, answer.text
        answer = ops.post(
            "/api/schedules",
            json={"agent": "greeter", "message": "Scheduled hello", "intervalSeconds": 1},
        )
        assert answer.status_code == 201, answer.text
        schedule_id = answer.json()["id"]

        def runs() -> list[dict[str, object]]:
            return list(ops.get(f"/api/schedules/{schedule_id}").json().get("runs") or [])

        wait_until(lambda: any(r.get("threadId") for r in runs()), "a scheduled run", timeout=60)
        assert ops.post(f"/api/schedules/{schedule_id}/pause").status_code == 200
        wait_until(lambda: len(receiver.requests) >= 2, "the refused delivery's retry", timeout=60)
    finally:
        receiver.shutdown()
    (first, body, refused), (again, body_again, taken) = receiver.requests[:2]
    assert (refused, taken) == (500, 200)
    assert first["Webhook-Id"] == again["Webhook-Id"]  # the same delivery, retried
    assert body == body_again
    payload = json.loads(body)
    assert payload["event"] == "session.finished" and payload["agent"] == "greeter"
    assert payload["status"] == "completed" and payload["message"]  # the reply's text
    stamp = again["Webhook-Timestamp"]
    mac = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert again["Webhook-Signature"] == f"v1={mac}"
    run_threads = {r["threadId"] for r in runs() if r.get("threadId")}
    assert payload["threadId"] in run_threads
