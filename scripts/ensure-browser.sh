#!/usr/bin/env bash
# Install Debian's chromium headless shell and chromium for the browser tests if they are
# missing. Playwright drives them through their executable paths: Playwright's own browser
# download cannot work on this machine kind (closed network). Most tests run in the headless
# shell: the same Blink and V8 as the full browser without the desktop browser around them,
# the build Playwright itself runs for headless tests, loading a page for a third of the full
# browser's CPU on this machine (docs/testing.md). The full chromium serves what only it has
# (its PDF viewer, in tests/browser/test_user_files_inert.py). CHROMIUM_PATH and
# CHROMIUM_FULL_PATH choose other binaries.
set -euo pipefail

SHELL_BIN="${CHROMIUM_PATH:-/usr/bin/chromium-headless-shell}"
FULL_BIN="${CHROMIUM_FULL_PATH:-/usr/bin/chromium}"
missing=()
[ -x "$SHELL_BIN" ] || missing+=(chromium-headless-shell)
[ -x "$FULL_BIN" ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ -n "${CHROMIUM_PATH:-}${CHROMIUM_FULL_PATH:-}" ]; then
  echo "CHROMIUM_PATH / CHROMIUM_FULL_PATH name a file that is not an executable" >&2
  exit 1
fi
echo "Installing ${missing[*]} from Debian's packages…"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null \
  || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null; }
for bin in "$SHELL_BIN" "$FULL_BIN"; do
  [ -x "$bin" ] || { echo "$bin did not install" >&2; exit 1; }
done
