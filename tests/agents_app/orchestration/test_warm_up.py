"""Processes warm up before they serve (agents_app/orchestration/warm_up.py).

Each check runs in a fresh interpreter: this test process has long imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, sys
import django
django.setup()
before = set(sys.modules)
{body}
print(json.dumps({{"result": result, "new": sorted(set(sys.modules) - before)}}))
"""


def probe(body: str, **env: str) -> dict[str, object]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        # Nothing listens on port 9: a warm-up that connected anywhere would fail its step.
        "REDIS_URL": "redis://127.0.0.1:9/0",
        "STUDIO_EXECUTOR": "celery",
        **env,
    }
    environment.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_web_warm_up_loads_the_urlconf_and_the_celery_producer_without_connecting() -> None:
    out = probe(
        "from agents_app.orchestration.warm_up import warm_web\n"
        "from agents_app.tasks.session_tasks import run_session\n"
        "result = [warm_web(), run_session.app.finalized,"
        " run_session.app._backend_cache is not None]"
    )
    steps, finalized, backend_resolved = out["result"]  # type: ignore[misc]
    assert steps == ["urls", "celery producer", "channel layer"]
    assert finalized is True
    assert backend_resolved is True  # the first post does not read the entry points
    new = out["new"]
    assert "studio.urls" in new and "agents_app.api" in new  # type: ignore[operator]
    assert "kombu.transport.redis" in new  # type: ignore[operator]


def test_the_asgi_module_warms_up_before_it_serves() -> None:
    out = probe("import studio.asgi\nresult = None")
    new = out["new"]
    assert "studio.urls" in new and "kombu.transport.redis" in new  # type: ignore[operator]


def test_the_embedded_executor_has_no_producer_to_warm() -> None:
    out = probe(
        "from agents_app.orchestration.warm_up import warm_web\nresult = warm_web()",
        STUDIO_EXECUTOR="inprocess",
    )
    assert "kombu.transport.redis" not in out["new"]  # type: ignore[operator]


def test_a_worker_warms_up_the_engine_and_the_provider_factories_at_start() -> None:
    out = probe(
        "from celery.signals import worker_process_init\n"
        "from studio.celery import app\n"
        "app.loader.import_default_modules()  # the worker imports the task modules\n"
        "worker_process_init.send(sender=None)\n"
        "result = None",
        STUDIO_PROVIDER_FACTORIES="test=bench.clocked_provider.factory",
    )
    new = out["new"]
    for module in (
        "agents_app.orchestration.runner",
        "bench.clocked_provider",
        "httpcore._async.connection_pool",
    ):
        assert module in new, module  # type: ignore[operator]


def test_a_step_that_fails_is_logged_and_skipped() -> None:
    out = probe(
        "import logging\n"
        "records = []\n"
        "logging.getLogger('agents_app.orchestration.warm_up').addHandler(\n"
        "    type('H', (logging.Handler,), {'emit': lambda self, r: records.append(r.getMessage())})()\n"
        ")\n"
        "from agents_app.orchestration.warm_up import warm_worker\n"
        "result = [warm_worker(), records]",
        STUDIO_PROVIDER_FACTORIES="test=no_such_module.factory",
    )
    steps, records = out["result"]  # type: ignore[misc]
    assert steps == ["channel layer"]
    assert len(records) == 1 and "'engine' failed" in records[0] and "no_such_module" in records[0]
