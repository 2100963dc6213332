#!/usr/bin/env bash
# Install the test OpenID provider (tests/oidc_provider: panva's oidc-provider, pinned in its
# package-lock.json) from the npm registry if it is missing or its lock changed. The sign-in
# tests (tests/identity) start it with Node on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../tests/oidc_provider"
command -v node >/dev/null 2>&1 || { echo "node is missing: install Node.js 20+ (apt-get install nodejs npm)" >&2; exit 1; }
stamp=node_modules/.lock-installed
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
cp package-lock.json "$stamp"
