#!/usr/bin/env bash
# Build the upstream side of the side-by-side benchmark: export the DeepSeek Harness
# system-prompt package and the sources it imports from an upstream git checkout, and bundle
# them, unchanged, into one ES module that bench.mjs loads.
#
#   tests/upstream/build.sh OUT UPSTREAM_GIT_DIR [REV]
#
# UPSTREAM_GIT_DIR is a clone of the upstream repository (deepseek-ai/deepseek-harness).
#
# Writes OUT/upstream-system-prompt.mjs (the bundle) and OUT/smol-toml.mjs (the TOML parser
# bench.mjs reads host.toml with). Needs git, node and npm (the npm registry is the only
# network access: esbuild and smol-toml, pinned below).
set -euo pipefail

OUT=${1:?usage: build.sh OUT UPSTREAM_GIT_DIR [REV]}
MIRROR=${2:?usage: build.sh OUT UPSTREAM_GIT_DIR [REV]}
REV=${3:-dsh-v0.1.1-rc.2}
ESBUILD_VERSION=0.28.2
SMOL_TOML_VERSION=1.9.1

# The system-prompt package and what its runtime imports reach: the scope package, the
# vendored cordis (with cosmokit) and schemastery, and the invariants service for the
# optional invariant companion (bench.mjs --invariants). Type-only imports (dsh-llm,
# @standard-schema/spec) vanish when bundling. tsconfig.base.json carries upstream's own
# `paths` mapping of the @deepseek-ai/* names to these source folders, which esbuild follows.
PATHS=(
  tsconfig.base.json
  packages/core/system-prompt/src packages/core/system-prompt/package.json
  packages/core/system-prompt/tsconfig.json
  packages/core/scope/src packages/core/scope/package.json packages/core/scope/tsconfig.json
  packages/runtime-diagnostics/invariants/src
  packages/runtime-diagnostics/invariants/package.json
  packages/runtime-diagnostics/invariants/tsconfig.json
  vendor/cordis vendor/cosmokit vendor/schemastery
  LICENSE
)

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/src"
mkdir -p "$OUT/src"
git -C "$MIRROR" archive "$REV" "${PATHS[@]}" | tar -x -C "$OUT/src"
# What bench.mjs reports as "upstream".
printf '{"rev": "%s", "commit": "%s"}\n' "$REV" "$(git -C "$MIRROR" rev-parse "$REV^{commit}")" \
  >"$OUT/upstream.json"

# esbuild and the TOML parser, pinned, in OUT (not in the project).
cd "$OUT"
[ -f package.json ] || echo '{"private": true}' >package.json
npm install --no-audit --no-fund --silent \
  "esbuild@$ESBUILD_VERSION" "smol-toml@$SMOL_TOML_VERSION"

# The entry re-exports the package's public API plus what a deployment uses to mount it
# (cordis Context, scope minting, the invariants service). It adds no code of its own.
cat >entry.ts <<'ENTRY'
export * from './src/packages/core/system-prompt/src/index.ts'
export * as SystemPromptInvariant from './src/packages/core/system-prompt/src/invariant.ts'
export { Context } from './src/vendor/cordis/src/index.ts'
export { createScope, scopeChainOf } from './src/packages/core/scope/src/index.ts'
export { default as InvariantRegistry } from './src/packages/runtime-diagnostics/invariants/src/index.ts'
ENTRY

# Upstream asks for Node 22+; the bundle targets the Node that runs the bench (these sources
# use no runtime API that Node 20 lacks). --tsconfig makes every import resolve the
# @deepseek-ai/* names through upstream's own `paths`.
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
./node_modules/.bin/esbuild entry.ts --bundle --format=esm --platform=node \
  --target="node$NODE_MAJOR" --tsconfig=src/tsconfig.base.json \
  --outfile=upstream-system-prompt.mjs --log-level=warning
./node_modules/.bin/esbuild node_modules/smol-toml/dist/index.js --bundle --format=esm \
  --platform=node --outfile=smol-toml.mjs --log-level=warning
echo "$OUT/upstream-system-prompt.mjs ($(cat upstream.json))"
