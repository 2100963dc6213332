#!/usr/bin/env bash
# Install Debian's chromium for the browser tests if it is missing. Playwright drives it
# through its executable path: Playwright's own browser download cannot work on this
# machine kind (closed network). Set CHROMIUM_PATH to use another chromium binary.
set -euo pipefail

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] && exit 0
if [ -n "${CHROMIUM_PATH:-}" ]; then
  echo "CHROMIUM_PATH=$CHROMIUM is not an executable" >&2
  exit 1
fi
echo "Installing chromium from Debian's packages…"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get install -y -qq chromium >/dev/null \
  || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null; }
[ -x "$CHROMIUM" ] || { echo "chromium did not install at $CHROMIUM" >&2; exit 1; }
