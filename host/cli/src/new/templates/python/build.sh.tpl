#!/usr/bin/env bash
# Build dist/plugin.wasm. Needs Python >= 3.9 with venv; the first run installs the pinned
# componentize-py into .venv, later runs reuse it, so they work offline.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/componentize-py ] || [ requirements.txt -nt .venv/bin/componentize-py ]; then
    "${PYTHON:-python3}" -m venv .venv
    .venv/bin/python -m pip install --disable-pip-version-check -q -r requirements.txt
    touch .venv/bin/componentize-py
fi
mkdir -p dist
.venv/bin/componentize-py --wit-path wit/0.1.0 --world plugin componentize --python-path src app --output dist/plugin.wasm
ls -l dist/plugin.wasm
