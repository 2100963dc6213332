"""The README's run command brings up the studio on embedded defaults with the demo agents."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def running_app(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = _free_port()
    log = tmp_path / "run.log"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "TEST_DB_NAME")
    }
    # The install step as the test command runs it: bytecode is written at first import
    # rather than compiled for every installed package first (16 s of CPU in a fresh clone,
    # where the suite's own install left the packages uncompiled).
    env.update(
        STUDIO_VAR_DIR=str(tmp_path / "var"), PORT=str(port), STUDIO_INSTALL_LAZY_BYTECODE="1"
    )
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["./scripts/run.sh"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"run.sh exited early:\n{log.read_text()}"
            try:
                if httpx.get(f"{base}/admin/login/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail(f"the studio did not come up:\n{log.read_text()}")
        yield base, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_run_command_serves_the_studio_with_the_demo_agents(running_app: tuple[str, Path]) -> None:
    base, log = running_app
    output = log.read_text()
    password = re.search(r"with the password: (\S+)", output)
    assert password, output
    assert f"{base}/admin/" in output  # the URL is printed
    client = httpx.Client(base_url=base, follow_redirects=True)
    page = client.get("/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token
    client.post(
        "/admin/login/?next=/admin/",
        data={
            "username": "admin",
            "password": password.group(1),
            "csrfmiddlewaretoken": token.group(1),
        },
        headers={"Referer": f"{base}/admin/login/"},
    )
    agents = client.get("/admin/agents_app/agent/")
    assert agents.status_code == 200
    for name in ("support_agent", "debate_agent", "intent_classifier"):
        assert name in agents.text
