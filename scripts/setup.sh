#!/usr/bin/env bash
# FACT setup for a fresh Debian machine with the CUDA toolkit at /usr/local/cuda:
#   1. Debian packages the engine builds with (JSON, CLI parsing, formatting, hashing,
#      SQLite, GoogleTest, CMake, Ninja; clang and its runtimes for scripts/sanitize.sh's
#      sanitizer and libFuzzer build);
#   2. a virtual environment .venv with the pinned PyPI packages (torch, pytest, numpy,
#      matplotlib for the report's charts, tqdm for the progress bars, transformers for the
#      Hugging Face layer tests) and the `fact` package itself (editable; this also registers
#      the torch.compile backend "fact");
#   3. the CUTLASS C++ headers from the nvidia-cutlass wheel into .deps/cutlass;
#   4. the engine (factc) and its tests, built into build/.
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Pinned versions (torch matches the GPU machine's 2.11).
TORCH_VERSION=2.11.0
CUTLASS_WHEEL_VERSION=4.2.0.0
PYTEST_VERSION=8.3.4
NUMPY_VERSION=2.4.6
# Progress bars of compiling and tuning (fact.progress).
TQDM_VERSION=4.70.1
# Optional at run time: without it `fact optimize` skips the report's PNG charts.
MATPLOTLIB_VERSION=3.11.2
# Tests only: one layer each of Llama, Mistral, Qwen2, GPT-2, BERT, ViT and T5 built from
# tiny configs (tests/python/test_hf_layers.py skips without it; nothing is downloaded).
TRANSFORMERS_VERSION=5.23.0
# Packaging: setuptools 70.1 and later build the editable install without `wheel`'s
# bdist_wheel (whose FutureWarning older ones raise) and without the beta warning of
# [tool.setuptools] in pyproject.toml.
SETUPTOOLS_VERSION=80.9.0
WHEEL_VERSION=0.45.1

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
DEBS="cmake ninja-build g++ clang libclang-rt-dev nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev libsqlite3-dev libgtest-dev python3-venv unzip"
missing=""
for p in $DEBS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: installing Debian packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: nvcc not found: install the CUDA toolkit (13.0) at /usr/local/cuda" >&2
  exit 1
fi
export PATH="$PATH:/usr/local/cuda/bin"

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q "torch==${TORCH_VERSION}" "pytest==${PYTEST_VERSION}" \
  "numpy==${NUMPY_VERSION}" "matplotlib==${MATPLOTLIB_VERSION}" "tqdm==${TQDM_VERSION}" \
  "transformers==${TRANSFORMERS_VERSION}" "setuptools==${SETUPTOOLS_VERSION}" "wheel==${WHEEL_VERSION}"
.venv/bin/python -m pip install -q --no-build-isolation --no-deps -e .

if [ ! -f .deps/cutlass/include/cutlass/version.h ]; then
  echo "setup: fetching CUTLASS headers (nvidia-cutlass==${CUTLASS_WHEEL_VERSION})"
  tmp="$(mktemp -d)"
  .venv/bin/python -m pip download -q --no-deps -d "$tmp" "nvidia-cutlass==${CUTLASS_WHEEL_VERSION}"
  unzip -q "$tmp"/nvidia_cutlass-*.whl 'cutlass_library/source/include/*' \
    'cutlass_library/source/tools/util/include/*' -d "$tmp/x"
  mkdir -p .deps/cutlass/tools/util
  rm -rf .deps/cutlass/include .deps/cutlass/tools/util/include
  mv "$tmp/x/cutlass_library/source/include" .deps/cutlass/include
  mv "$tmp/x/cutlass_library/source/tools/util/include" .deps/cutlass/tools/util/include
  rm -rf "$tmp"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
echo "setup: done (engine: build/factc, Python: .venv, CUTLASS: .deps/cutlass)"
