"""``manage.py`` in a subprocess against a database of the test's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def manage(*args: str, database_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url}
    env.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def check_at_start(**settings: str) -> subprocess.CompletedProcess[str]:
    """``manage.py check`` on embedded defaults plus ``settings``: what every process runs
    through at start (a bad setting must stop it there)."""
    env = {"PATH": "/usr/bin:/bin", "STUDIO_VAR_DIR": "/tmp", **settings}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
