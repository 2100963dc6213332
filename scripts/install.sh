#!/usr/bin/env bash
# Install the locked dependencies into .venv (uv.lock is the lock file).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
UV="$(command -v uv || echo "python3 -m uv")"
$UV sync --frozen --quiet "$@"
