#!/usr/bin/env bash
# The model zoo (bench/zoo.py) on the GPU machine in one call, a short table last.
#   FACTC=.gpu-bin/factc FACT_COMMIT=<sha> MODELS="gpt2 vit" POLICIES="bf16" bash bench/gpu_zoo.sh
# 1. The environment (GPU, driver, nvcc, factc) into env.txt, and the Python side's GPU tests
#    (tests/python/test_gpu.py: the kernel ABIs on device memory, a kernel inside Inductor's
#    code replayed as a CUDA graph) into gpu-tests.log.
# 2. bench/zoo.py over MODELS x POLICIES (TUNE_BUDGET candidates a pattern, default 2;
#    ABLATION_S seconds of ablation a subgraph, default 90; JOBS nvcc processes, default 16;
#    MAX_AUTOTUNE=1 adds torch.compile's max-autotune-no-cudagraphs column), the subgraph
#    folders in /tmp/zoo-work, the rows into $OUT/zoo-<gpu>.json + .md (rewritten after
#    each row, so a run stopped at its limit keeps the rows it finished), the log into
#    zoo.log and the subgraphs' reports and composition files into zoo-work.tar.gz.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
  "$FACT_FACTC" --version
  python3 -c "import torch, transformers, torchvision; print('torch', torch.__version__, 'transformers', transformers.__version__, 'torchvision', torchvision.__version__)"
} 2>&1 | tee "$OUT/env.txt"
python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu.py > "$OUT/gpu-tests.log" 2>&1
tail -1 "$OUT/gpu-tests.log"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'h100|h200' | tr A-Z a-z)
args=(--tune-budget "${TUNE_BUDGET:-2}" --ablation-budget "${ABLATION_S:-90}" --jobs "${JOBS:-16}"
      --out-dir /tmp/zoo-work --results "$OUT/zoo-${gpu:-gpu}.json")
for p in ${POLICIES:-bf16}; do args+=(--policy "$p"); done
[ "${MAX_AUTOTUNE:-0}" = 1 ] && args+=(--max-autotune)
python3 bench/zoo.py --models ${MODELS:-gpt2 vit} "${args[@]}" > "$OUT/zoo.log" 2>&1
echo "zoo.py exit $?"
tar czf "$OUT/zoo-work.tar.gz" --exclude='*.so' --exclude='*.pt' --exclude='*.o' -C /tmp zoo-work 2>/dev/null
grep -E "\[fact\] fact backend|Warning|Error|failed" "$OUT/zoo.log" | cut -c1-400 | tail -25
cat "$OUT/zoo-${gpu:-gpu}.md" 2>/dev/null | tail -15
