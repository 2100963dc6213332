"""What a process imports to start (issue #53: the suite starts a few hundred Daphne, Celery
and ``manage.py`` processes; issue #58: a worker's start). The MCP SDK builds its protocol
types at import, about a second of CPU, numpy takes 0.13 s more and Daphne with Twisted
0.25 s: a process imports them when it first connects to an MCP server, answers ``/mcp``,
embeds a text or serves HTTP, never to start. ``django.setup()`` went from 2.3 s to about
1.3 s of CPU on this machine with that (docs/testing.md).

A child process each, so what this test run imported does not count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[3]
# Imported only on use (``runtime.mcp.connection``; the knowledge services' vectors; the
# ASGI server, which only ``studio.serve`` starts; jsonschema, 0.2 s with what it brings, when
# a tool call's arguments or an answer are first checked against a schema).
ON_USE = ("mcp", "mcp_types", "numpy", "daphne", "twisted", "jsonschema")


def _snapshots(code: str) -> list[set[str]]:
    """Every module a fresh process has imported after ``django.setup()``, at each ``snap()``
    that ``code`` calls and at its end."""
    script = (
        "import json, os, sys\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'studio.settings')\n"
        "import django\n"
        "django.setup()\n"
        "def snap():\n"
        "    print(json.dumps(sorted(sys.modules)))\n"
        f"{code}\n"
        "snap()\n"
    )
    env = {**os.environ, "STUDIO_EXECUTOR": "inprocess"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [set(json.loads(line)) for line in done.stdout.splitlines() if line.startswith("[")]


def _imported_after(code: str) -> set[str]:
    """The top-level packages a fresh process has imported after ``django.setup()`` and
    ``code``."""
    return {name.split(".")[0] for name in _snapshots(code)[-1]}


def test_a_django_process_starts_without_the_mcp_sdk_or_numpy() -> None:
    modules = _snapshots("")[-1]
    imported = {name.split(".")[0] for name in modules}
    assert "django" in imported and "agents_app" in imported
    assert not imported & set(ON_USE), sorted(imported & set(ON_USE))
    # Nor the API or the studio (below): the URLconf and the admin's checks load them.
    assert not modules & set(SERVED_ONLY), sorted(modules & set(SERVED_ONLY))


def test_a_warmed_worker_with_its_engine_built_has_not_imported_them_either() -> None:
    # What a Celery worker does before its first session (the engine, its MCP connector).
    imported = _imported_after(
        "from agents_app.orchestration.warm_up import warm_worker\n"
        "warm_worker()\n"
        "from runtime.mcp.client import POOL, McpConnector"
    )
    assert "runtime" in imported
    assert not imported & set(ON_USE), sorted(imported & set(ON_USE))


def test_the_web_server_s_application_starts_without_the_mcp_sdk_or_numpy() -> None:
    # What Daphne imports (``studio.asgi``, its warm-up included): ``/mcp`` loads the SDK on
    # its first request (``agents_app.mcp_endpoint.mount``).
    imported = _imported_after("import studio.asgi")
    assert "channels" in imported
    assert not imported & {"mcp", "mcp_types", "numpy"}, sorted(imported & set(ON_USE))


def test_the_first_mcp_connection_imports_the_sdk() -> None:
    # The other side of the same rule: the SDK is still there when a server is used.
    imported = _imported_after("import runtime.mcp.connection")
    assert "mcp" in imported


# The API (ninja builds about 1,700 pydantic models as its routes are declared) and the
# studio's ModelAdmins: imported where pages and routes are served, not by every process.
SERVED_ONLY = ("agents_app.api", "agents_app.admin", "studio.urls")


def test_a_worker_starts_without_the_api_or_the_studio() -> None:
    # What ``celery -A studio worker`` and ``beat`` do before their first task: the loader
    # imports the task modules, after Celery's Django fixup (which ran every system check,
    # the URL check importing the API, and dropped the result: studio/celery.py turns it off).
    imported = _snapshots("from studio.celery import app\napp.loader.init_worker()")[-1]
    assert "agents_app.tasks.session_tasks" in imported
    assert not imported & set(SERVED_ONLY), sorted(imported & set(SERVED_ONLY))


def test_the_admin_checks_load_the_studio_first() -> None:
    # django.setup() no longer imports every admin.py (studio/apps.py): the admin's system
    # checks do, so `manage.py check` still checks every ModelAdmin (the URLconf loads them
    # where the studio is served: every admin test).
    before, checked = _snapshots(
        "snap()\n"
        "from django.contrib import admin\n"
        "from django.core.checks import Tags, run_checks\n"
        "assert not run_checks(tags=[Tags.admin])\n"
        "assert len(admin.site._registry) > 20, admin.site._registry"
    )
    assert "agents_app.admin" not in before
    assert "agents_app.admin" in checked and "studio.urls" not in checked


def test_the_health_probe_runs_no_system_checks() -> None:
    # docker/compose.yaml probes every container every 30 s with it: 3.3 s of CPU a probe
    # with the checks (they import the API and the studio), about 1.1 s without.
    from agents_app.management.commands.healthcheck import Command

    assert Command.requires_system_checks == []
