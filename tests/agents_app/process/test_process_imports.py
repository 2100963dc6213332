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


def _imported_after(code: str, *, packages: bool = True) -> set[str]:
    """The top-level packages (or, with ``packages=False``, every module) a fresh process has
    imported after ``django.setup()`` and ``code``."""
    names = "{m.split('.')[0] for m in sys.modules}" if packages else "set(sys.modules)"
    script = (
        "import json, os, sys\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'studio.settings')\n"
        "import django\n"
        "django.setup()\n"
        f"{code}\n"
        f"print(json.dumps(sorted({names})))\n"
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
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_django_process_starts_without_the_mcp_sdk_or_numpy() -> None:
    imported = _imported_after("")
    assert "django" in imported and "agents_app" in imported
    assert not imported & set(ON_USE), sorted(imported & set(ON_USE))


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
    imported = _imported_after(
        "from studio.celery import app\napp.loader.init_worker()", packages=False
    )
    assert "agents_app.tasks.session_tasks" in imported
    assert not imported & set(SERVED_ONLY), sorted(imported & set(SERVED_ONLY))


def test_a_setup_leaves_the_studio_to_the_urls_and_the_checks() -> None:
    # django.setup() no longer imports every admin.py (studio/apps.py): the URLconf and the
    # admin's system checks do, so `manage.py check` still checks every ModelAdmin.
    assert not _imported_after("", packages=False) & set(SERVED_ONLY)
    counted = _imported_after(
        "from django.contrib import admin\n"
        "from django.core.checks import Tags, run_checks\n"
        "assert not run_checks(tags=[Tags.admin])\n"
        "print(len(admin.site._registry))",
        packages=False,
    )
    assert "agents_app.admin" in counted and "studio.urls" not in counted
    served = _imported_after("import studio.urls", packages=False)
    assert "agents_app.admin" in served


def test_the_health_probe_runs_no_system_checks() -> None:
    # docker/compose.yaml probes every container every 30 s with it: 3.3 s of CPU a probe
    # with the checks (they import the API and the studio), about 1.1 s without.
    from agents_app.management.commands.healthcheck import Command

    assert Command.requires_system_checks == []
