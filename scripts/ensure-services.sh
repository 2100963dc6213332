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

if [ -z "${TEST_REDIS_URL:-}" ] && ! redis_up; then
  echo "Starting Redis…"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || { echo "Redis did not start on 127.0.0.1:6379" >&2; exit 1; }
fi
