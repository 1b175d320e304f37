#!/usr/bin/env bash
# Build dist/plugin.wasm. Needs Node.js >= 20 and npm; the first run installs the pinned
# toolchain from package-lock.json into node_modules, later runs reuse it (and npm's cache),
# so they work offline.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --prefer-offline --no-audit --no-fund
fi
npm run build
ls -l dist/plugin.wasm
