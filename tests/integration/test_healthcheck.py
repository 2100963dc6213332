"""``manage.py healthcheck`` against real processes, and the compose file that uses it."""

from __future__ import annotations

import json
import socket
import subprocess
from typing import Any

import pytest
import yaml

from tests.integration.stack import BIN, ROOT, Stack, wait_until

pytestmark = pytest.mark.integration


def healthcheck(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "python"), "manage.py", "healthcheck", *args],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_health_checks_follow_the_real_processes(stack: Stack, worker: Any) -> None:
    web = healthcheck(stack, "web", "--port", str(stack.port))
    assert web.returncode == 0, web.stderr
    node = f"hc@{socket.gethostname()}"
    process = worker("hc")
    wait_until(
        lambda: healthcheck(stack, "worker", "--node", node).returncode == 0,
        "the worker to answer its health check",
        timeout=60,
    )
    assert healthcheck(stack, "beat").returncode == 0
    process.kill_hard()
    dead = healthcheck(stack, "worker", "--node", node)
    assert dead.returncode == 1 and "no answer to a ping" in dead.stderr
    closed = healthcheck(stack, "web", "--port", "1")
    assert closed.returncode == 1 and closed.stderr.startswith("CommandError: web:")


def test_every_long_running_service_restarts_and_has_a_health_check() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    services = compose["services"]
    for name, service in services.items():  # YAML merge keys (<<: *app) already applied
        if name == "migrate":  # one-shot
            assert service["restart"] == "no"
            continue
        assert service.get("restart") == "unless-stopped", name
        assert service.get("healthcheck", {}).get("test"), name
    assert services["web"]["depends_on"]["redis"] == {"condition": "service_healthy"}
    # sockets is a second Daphne pool (docker/nginx/edge.conf): checked as web is.
    for name, role in (("web", "web"), ("sockets", "web"), ("worker", "worker"), ("beat", "beat")):
        test = services[name]["healthcheck"]["test"]
        assert test[1:4] == ["python", "manage.py", "healthcheck"] and test[4] == role
    # The edge is checked by nginx's own answer, not through Django (which would need a Host
    # from ALLOWED_HOSTS and, with STUDIO_HTTPS, redirect a plain request).
    assert services["edge"]["healthcheck"]["test"][-1] == "http://127.0.0.1:8000/.edge/health"


def _pool_size(stack: Stack, node: str) -> int | None:
    """The pool size the worker ``node`` reports (``celery inspect stats``), None if silent."""
    done = subprocess.run(
        [str(BIN / "celery"), "-A", "studio", "inspect", "stats", "--json", "-d", node],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        return int(json.loads(done.stdout)[node]["pool"]["max-concurrency"])
    except (ValueError, KeyError, TypeError):
        return None


def test_the_compose_worker_streams_as_many_sessions_as_the_plan_says(stack: Stack) -> None:
    """Each session holds a pool thread while it runs, so the pool's size is the most
    sessions a worker container streams at once: it must be the compose file's setting (the
    scale-out plan's ~250), not a number its command line pins."""
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    command = compose["services"]["worker"]["command"]
    wanted = int(compose["x-app"]["environment"]["CELERY_WORKER_CONCURRENCY"])
    assert command[:4] == ["celery", "-A", "studio", "worker"] and wanted >= 200
    node = f"compose@{socket.gethostname()}"
    args = [str(BIN / "celery"), *command[1:], "-n", node, "--without-gossip", "--without-mingle"]
    process = stack.spawn("compose-worker", args, {"CELERY_WORKER_CONCURRENCY": str(wanted)})
    try:
        wait_until(
            lambda: _pool_size(stack, node) is not None,
            "the compose worker to answer",
            timeout=60,
        )
        assert _pool_size(stack, node) == wanted
    finally:
        process.stop()
