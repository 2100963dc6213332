"""Embedded mode end to end: no Redis, no Celery. Daphne on SQLite runs sessions on its own
event loop (the in-process executor) and streams through the in-memory channel layer."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from tests.integration.stack import BIN, DAPHNE, ROOT, Process, free_port, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
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
        }
    )
    python = str(BIN / "python")
    for args in (
        [python, "manage.py", "migrate", "-v", "0"],
        [python, "-m", "tests.integration.seed"],
    ):
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
    key = json.loads(done.stdout.strip().splitlines()[-1])["keys"]["alice"]
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
        yield base, key
    finally:
        process.stop()


def test_embedded_mode_runs_and_streams_a_session(embedded: tuple[str, str]) -> None:
    base, key = embedded
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
