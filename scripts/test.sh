#!/usr/bin/env bash
# Install everything and run the whole test suite: lint, types, import contracts, pytest.
# Integration tests use the real PostgreSQL and Redis on 127.0.0.1 (started here if needed).
set -euo pipefail
cd "$(dirname "$0")/.."
# One pytest worker more than the cores: the browser and integration tests spend much of their
# time waiting on the processes they start, and a third worker fills those waits (measured
# in docs/testing.md). PYTEST_WORKERS=0 runs everything in this one process (a debugger).
workers="${PYTEST_WORKERS:-$(($(nproc) + 1))}"
STUDIO_INSTALL_LAZY_BYTECODE=1 ./scripts/install.sh
TEST_PG_MAX_CONNECTIONS="$((workers * 80 + 60))" ./scripts/ensure-services.sh
./scripts/ensure-browser.sh
./scripts/ensure-pgbouncer.sh
./scripts/ensure-nginx.sh
./scripts/ensure-oidc-provider.sh

export DATABASE_URL="${TEST_DATABASE_URL:-postgres://root@127.0.0.1:5432/postgres}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}"
# Unit tests run in embedded mode; integration tests start their own Redis-backed processes.
unset REDIS_URL
# pytest keeps each test module's assertion-rewritten code in __pycache__, unless
# PYTHONDONTWRITEBYTECODE is set (the Docker image and some machines set it): then every
# worker parses and rewrites all the test modules again at every run, 13 of the 22 s of CPU
# a worker spends collecting the fast loop (docs/testing.md). The tests are compiled by this
# run; the packages were by the install above.
unset PYTHONDONTWRITEBYTECODE

started=$SECONDS
echo "== ruff"; .venv/bin/ruff check .
echo "== ruff format"; .venv/bin/ruff format --check . >/dev/null || { .venv/bin/ruff format --check .; exit 1; }
echo "== import contracts"; .venv/bin/lint-imports
echo "== migrations"; .venv/bin/python manage.py makemigrations --check --dry-run >/dev/null
# mypy (a minute of one core on a fresh clone) runs beside pytest, whose workers spend much
# of their time waiting on the processes their tests start; its verdict is read at the end.
checks="$(mktemp)"
.venv/bin/mypy runtime agents_app studio >"$checks" 2>&1 &
mypy_pid=$!
echo "== pytest (mypy beside it; $((SECONDS - started)) s of checks so far)"
# pytest-xdist: each worker has its own test database, stacks and Redis databases; a test
# file is one unit of work, the slow folders go first (docs/testing.md).
set +e
.venv/bin/pytest -q -p no:cacheprovider -n "$workers" --dist loadgroup "$@"
status=$?
wait "$mypy_pid"
mypy_status=$?
set -e
echo "== mypy"; cat "$checks"; rm -f "$checks"
echo "== done in $((SECONDS - started)) s after the install"
[ "$mypy_status" -eq 0 ] || exit "$mypy_status"
# pytest exits 5 when it collected nothing: that is a failure of the suite, not a pass.
exit $status
