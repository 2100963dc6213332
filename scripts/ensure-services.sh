#!/usr/bin/env bash
# Start the local PostgreSQL and Redis that the integration tests use, if they are not running.
# The commands are this machine kind's own (see docs/operating.md); on other machines, set
# TEST_DATABASE_URL / TEST_REDIS_URL to services you run yourself.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if [ -z "${TEST_DATABASE_URL:-}" ] && ! pg_up; then
  echo "Starting PostgreSQL…"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "PostgreSQL did not start on 127.0.0.1:5432" >&2; exit 1; }
fi

# Each pytest worker runs stacks whose Daphne pools and Celery threads hold connections of
# their own (a browser site about thirty); PostgreSQL's default of 100 runs out with three
# workers ("sorry, too many clients already"). The suite's server gets at least
# TEST_PG_MAX_CONNECTIONS (scripts/test.sh: 80 a worker and 60 more), set once and kept.
want="${TEST_PG_MAX_CONNECTIONS:-300}"
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  have="$(psql -h 127.0.0.1 -U root -d postgres -Atc 'SHOW max_connections' 2>/dev/null || echo 0)"
  if [ "${have:-0}" -lt "$want" ]; then
    echo "PostgreSQL allows $have connections; setting max_connections = $want and restarting it…"
    psql -h 127.0.0.1 -U root -d postgres -qc "ALTER SYSTEM SET max_connections = $want"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main restart
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
    pg_up || { echo "PostgreSQL did not come back on 127.0.0.1:5432" >&2; exit 1; }
  fi
fi

if [ -z "${TEST_REDIS_URL:-}" ] && ! redis_up; then
  echo "Starting Redis…"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || { echo "Redis did not start on 127.0.0.1:6379" >&2; exit 1; }
fi
