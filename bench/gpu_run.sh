#!/usr/bin/env bash
# One GPU-machine run: check the engine, measure the ceilings, run a benchmark suite
# (SUITE=gemm by default, or skeleton; further arguments go to bench/suite.py).
# Expects a built factc (FACTC, default build/factc), CUTLASS headers in .deps/cutlass and
# optionally a warm kernel cache in .kcache. Writes at most six files to $OUT.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
  "$FACT_FACTC" --version
  [ "${SKIP_CEILINGS:-0}" = 1 ] || python3 bench/ceilings.py
} 2>&1 | tee "$OUT/env.txt"
SUITE="${SUITE:-gemm}"
python3 bench/suite.py "$SUITE" --out "$OUT/$SUITE-h200.json" --work /tmp/fact-work "$@" 2>&1 | tee "$OUT/$SUITE.log"
# The same plans realized again with the registry this run filled: nothing to compile or tune
# (TUNE_BUDGET must match the suite's --tune-budget, else the larger space is tuned anew).
python3 bench/realize_plans.py --plans /tmp/fact-work --out "$OUT/warm" --passes 1 \
  --tune-budget "${TUNE_BUDGET:-0}" 2>&1 | tee "$OUT/warm-registry.md"
for d in /tmp/fact-work/*/; do
  echo "## $(basename "$d")"; cat "$d/artifact/report.md" 2>/dev/null; echo
done > "$OUT/reports.md"
tar czf "$OUT/work.tar.gz" --exclude='*.so' --exclude='params.pt' -C /tmp fact-work 2>/dev/null
echo "gpu_run: done"
