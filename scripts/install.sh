#!/usr/bin/env bash
# Install the locked dependencies into .venv (uv.lock is the lock file), compiled to bytecode.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
UV="$(command -v uv || echo "python3 -m uv")"
# Compiled once here, not at every start: with PYTHONDONTWRITEBYTECODE set (as in the
# Docker image and on some machines) Python never writes .pyc files, so every process (each
# Daphne, worker and beat the tests start) compiled Django, Celery, our code and the rest
# from source again: about 1.8 s of CPU per start on a 2-core box. Python checks each .pyc
# against its source, so an edited file is still read from source.
# The test command sets STUDIO_INSTALL_LAZY_BYTECODE=1: it lets Python write each .pyc at
# first import (it unsets PYTHONDONTWRITEBYTECODE), which compiles only what the suite
# imports, not every file of every package (about 30 s of a fresh clone's run).
if [ "${STUDIO_INSTALL_LAZY_BYTECODE:-0}" = "1" ]; then
  $UV sync --frozen --quiet "$@"
  exit 0
fi
$UV sync --frozen --compile-bytecode --quiet "$@"
# A file that does not compile is reported here and by the checks that follow; it does not
# stop the install.
.venv/bin/python -m compileall -q -j 0 agents_app runtime studio bench manage.py || true
