#!/usr/bin/env bash
# Run the app on embedded defaults: SQLite, in-memory channel layer, in-process executor.
# Installs, migrates, loads the demo agents and serves on http://127.0.0.1:${PORT:-8000}/.
# The studio's password: printed once when 'admin' is created; STUDIO_ADMIN_PASSWORD, when
# set, is applied to 'admin' on every run; 'manage.py set_admin_password' sets a new one.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8000}"
# A busy port is said first, before anything is installed or any URL printed.
python3 scripts/port_free.py 127.0.0.1 "$PORT" || exit 1
./scripts/install.sh
PY=.venv/bin/python
$PY manage.py migrate --noinput
$PY manage.py load_demo
$PY manage.py collectstatic --noinput --verbosity 0
# Again: something may have taken the port while the steps above ran.
$PY scripts/port_free.py 127.0.0.1 "$PORT" || exit 1
echo
echo "Studio:  http://127.0.0.1:${PORT}/admin/   (log in as shown above)"
echo "Chat:    http://127.0.0.1:${PORT}/chat/"
echo
exec .venv/bin/python -m studio.serve -b 127.0.0.1 -p "$PORT" studio.asgi:application
