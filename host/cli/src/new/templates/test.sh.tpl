#!/usr/bin/env bash
# Build the plugin, then load it with prompt-host: `check` must list what it declares, and
# `render` and `assemble` must show what it contributes. PROMPT_HOST names the binary
# (default: prompt-host on PATH).
set -euo pipefail
cd "$(dirname "$0")"
prompt_host=${PROMPT_HOST:-prompt-host}

# expect WHAT NEEDLE TEXT: fail unless TEXT (the output of WHAT) contains NEEDLE.
expect() {
    if ! grep -qF -- "$2" <<<"$3"; then
        printf 'test.sh: FAIL: the output of %s lacks %s:\n%s\n' "$1" "$2" "$3" >&2
        exit 1
    fi
}

./build.sh

checked=$("$prompt_host" check dist/plugin.wasm)
printf '%s\n' "$checked"
__CHECK__
rendered=$("$prompt_host" render --config host.toml --fact cwd=/work)
printf '%s\n' "$rendered"
__RENDER__
assembled=$("$prompt_host" assemble --config host.toml --fact cwd=/work)
__ASSEMBLE__
echo "test.sh: ok"
