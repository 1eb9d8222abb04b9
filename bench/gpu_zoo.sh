#!/usr/bin/env bash
# The model zoo (bench/zoo.py) on the GPU machine in one call, a short table last.
#   FACTC=.gpu-bin/factc FACT_COMMIT=<sha> ROWS="gpt2:bf16 vit:bf16 bert:tf32" bash bench/gpu_zoo.sh
# 1. The environment (GPU, driver, nvcc, factc) into env.txt, and (unless SKIP_TESTS=1) the
#    Python side's GPU tests (tests/python/test_gpu.py: the kernel ABIs on device memory, a
#    kernel inside Inductor's code replayed as a CUDA graph) into gpu-tests.log.
# 2. bench/zoo.py once per ROWS entry MODEL:POLICY, in order, each into
#    /tmp/zoo-rows/MODEL-POLICY.json (TUNE_BUDGET candidates a pattern, default 2;
#    ABLATION_S seconds of ablation a subgraph, default 90; JOBS nvcc processes, default 16;
#    MAX_AUTOTUNE=1 adds torch.compile's max-autotune-no-cudagraphs column; LAYERS=N builds
#    N layers instead of the config's, same shapes a layer, for a quick check). A row that
#    would start after DEADLINE_S seconds (default 480) is left out.
# 3. The rows merged (bench/merge_results.py) into $OUT/zoo-<gpu>.json + .md, the log into
#    zoo.log, the subgraphs' reports and composition files into zoo-work.tar.gz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
start=$SECONDS
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
  "$FACT_FACTC" --version
  python3 -c "import torch, transformers, torchvision; print('torch', torch.__version__, 'transformers', transformers.__version__, 'torchvision', torchvision.__version__)"
} 2>&1 | tee "$OUT/env.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu.py > "$OUT/gpu-tests.log" 2>&1
  tail -1 "$OUT/gpu-tests.log"
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'h100|h200' | tr A-Z a-z)
mkdir -p /tmp/zoo-rows
parts=()
for row in ${ROWS:-gpt2:bf16 vit:bf16}; do
  model=${row%%:*}; policy=${row##*:}
  if [ $((SECONDS - start)) -gt "${DEADLINE_S:-480}" ]; then echo "left out: $row (deadline)"; continue; fi
  part=/tmp/zoo-rows/$model-$policy.json
  args=(--models "$model" --policy "$policy" --tune-budget "${TUNE_BUDGET:-2}"
        --ablation-budget "${ABLATION_S:-90}" --jobs "${JOBS:-16}" --out-dir /tmp/zoo-work
        --results "$part")
  [ "${MAX_AUTOTUNE:-0}" = 1 ] && args+=(--max-autotune)
  [ -n "${LAYERS:-}" ] && args+=(--layers "$LAYERS")
  python3 bench/zoo.py "${args[@]}" >> "$OUT/zoo.log" 2>&1
  echo "$row: zoo.py exit $? at $((SECONDS - start)) s"
  [ -f "$part" ] && parts+=("$part")
done
[ ${#parts[@]} -gt 0 ] && python3 bench/merge_results.py "${parts[@]}" --out "$OUT/zoo-${gpu:-gpu}.json"
python3 bench/zoo.py --render "$OUT/zoo-${gpu:-gpu}.json" > /dev/null 2>&1
tar czf "$OUT/zoo-work.tar.gz" --exclude='*.so' --exclude='*.pt' --exclude='*.o' -C /tmp zoo-work zoo-rows 2>/dev/null
grep -E "\[fact\] fact backend: [0-9a-f]+: FACT|Warning|Error|failed" "$OUT/zoo.log" | cut -c1-300 | tail -12
cat "$OUT/zoo-${gpu:-gpu}.md" 2>/dev/null | tail -14
