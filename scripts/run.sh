#!/usr/bin/env bash
# Run the app on embedded defaults: SQLite, in-memory channel layer, in-process executor.
# Installs, migrates, loads the demo agents and serves on http://127.0.0.1:${PORT:-8000}/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh
PY=.venv/bin/python
$PY manage.py migrate --noinput
$PY manage.py load_demo
$PY manage.py collectstatic --noinput --verbosity 0
PORT="${PORT:-8000}"
echo
echo "Studio:  http://127.0.0.1:${PORT}/admin/   (log in as shown above)"
echo "Chat:    http://127.0.0.1:${PORT}/chat/"
echo
exec .venv/bin/python -m studio.serve -b 127.0.0.1 -p "$PORT" studio.asgi:application
