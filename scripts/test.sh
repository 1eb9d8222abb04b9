#!/usr/bin/env bash
# Runs every test that needs no GPU: the engine's GoogleTest suite (graph round trips,
# golden discovery plans, tuning space, kernel cache, one real sm_90a compile per dtype)
# and the Python tests. GPU tests skip themselves without a GPU.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$PATH:/usr/local/cuda/bin"
ctest --test-dir build --output-on-failure -j 2
FACT_FACTC="$ROOT/build/factc" .venv/bin/python -m pytest -q tests/python tests/cli tests/scripts
