#!/usr/bin/env bash
# Install Debian's pgbouncer for tests/integration/test_pgbouncer.py if it is missing. The
# test runs a pgbouncer process of its own on a free port: the system service is never
# started (Debian's policy-rc.d on containers denies it anyway; we do not enable it).
set -euo pipefail

PGBOUNCER="${PGBOUNCER_PATH:-/usr/sbin/pgbouncer}"
[ -x "$PGBOUNCER" ] && exit 0
if [ -n "${PGBOUNCER_PATH:-}" ]; then
  echo "PGBOUNCER_PATH=$PGBOUNCER is not an executable" >&2
  exit 1
fi
echo "Installing pgbouncer from Debian's packages…"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get install -y -qq pgbouncer >/dev/null \
  || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq pgbouncer >/dev/null; }
[ -x "$PGBOUNCER" ] || { echo "pgbouncer did not install at $PGBOUNCER" >&2; exit 1; }
