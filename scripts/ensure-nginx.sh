#!/usr/bin/env bash
# Install Debian's nginx for tests/integration/test_edge_proxy.py if it is missing. The test
# runs an nginx process of its own (its own prefix, config and port, in the foreground): the
# system service is never started (Debian's policy-rc.d on containers denies it anyway; we do
# not enable it).
set -euo pipefail

NGINX="${NGINX_PATH:-/usr/sbin/nginx}"
[ -x "$NGINX" ] && exit 0
if [ -n "${NGINX_PATH:-}" ]; then
  echo "NGINX_PATH=$NGINX is not an executable" >&2
  exit 1
fi
echo "Installing nginx from Debian's packages…"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get install -y -qq nginx >/dev/null \
  || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq nginx >/dev/null; }
[ -x "$NGINX" ] || { echo "nginx did not install at $NGINX" >&2; exit 1; }
