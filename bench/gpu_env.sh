# Sourced by the GPU-machine scripts (gpu_run.sh, gpu_rows.sh): the repository root as the
# working directory, $OUT created, and the engine's environment — factc (FACTC, default
# build/factc), the CUDA libraries, the kernel cache (and the registry inside it, unless
# FACT_REGISTRY says otherwise): the repository's .kcache, or FACT_CACHE_DIR seeded from it
# (a cache that outlives the checkout) — and the Python package. Pass FACT_COMMIT (the commit
# the copied tree is at, e.g. FACT_COMMIT=$(git rev-parse --short HEAD) written into the
# command): the GPU machine's copy of the tree may carry a stale .git, whose HEAD the results
# would otherwise name.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-/tmp/fact-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export FACT_FACTC="$ROOT/${FACTC:-build/factc}"
export FACT_CACHE_DIR="${FACT_CACHE_DIR:-$ROOT/.kcache}"
if [ "$FACT_CACHE_DIR" != "$ROOT/.kcache" ] && [ -d "$ROOT/.kcache" ]; then
  mkdir -p "$FACT_CACHE_DIR" && cp -rn "$ROOT/.kcache/." "$FACT_CACHE_DIR/"
fi
export PYTHONPATH="$ROOT/python" PYTHONUNBUFFERED=1
if [ -z "${FACT_COMMIT:-}" ]; then
  echo "gpu_env: FACT_COMMIT is not set; results name $(git rev-parse --short HEAD 2>/dev/null || echo '?'), which a copied .git may not match" >&2
fi
