#!/usr/bin/env bash
# The kernel-level attention rows (bench/results/attention-kernels-<gpu>.json) re-measured on
# this GPU in one process: the kernels the reference results file chose (REF, default the
# H100 file's rows; each row names its fastest sm90 kernel), each verified against float64
# and timed against SDPA (plain and enable_gqa), eager and torch.compile on the six problems.
#   FACT_COMMIT=$(git rev-parse --short HEAD) bash bench/gpu_attention_kernels.sh
# Writes $OUT/rows.json (+ .md), $OUT/check.json (every kernel's row) and
# $OUT/attention-kernels-<gpu>.json (+ .md): the committed file of this GPU with these rows
# replacing its rows of the same problem and policy (bench/merge_results.py --replace), or
# these rows alone where none is committed; a short table last. About 90 s on the 16-core
# machine (the kernels build in 5 s each; torch.compile of the six eager forms dominates).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
export CUTLASS_INCLUDE="${CUTLASS_INCLUDE:-$ROOT/.deps/cutlass/include}"
REF="${REF:-bench/results/attention-kernels-h100.json}"
JOBS="${JOBS:-16}"
KERNELS=$(python3 -c "import json, sys; print(','.join(dict.fromkeys(k for r in json.load(open(sys.argv[1]))['rows'] for k in r.get('kernels', []))))" "$REF") \
  || { echo "gpu_attention_kernels: cannot read the kernels of $REF"; exit 1; }
GPU_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -o 'H[12]00' | tr 'H' 'h')
[ -n "$GPU_TAG" ] || { echo "gpu_attention_kernels: not an H100 or H200: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"; exit 1; }
echo "gpu_attention_kernels: $(echo "$KERNELS" | tr ',' '\n' | wc -l) kernels of $REF on the ${GPU_TAG^^}"
python3 bench/attention_check.py --sm90 --jobs "$JOBS" --trials 30 --compile --only "$KERNELS" \
  --problems llama3_8b_block_attention,hf_llama_causal_attention,mingpt_attention_core,llama3_8b_block_attention_tf32,hf_llama_causal_attention_tf32,mingpt_attention_core_tf32 \
  --out "$OUT/check.json" --results "$OUT/rows.json" > "$OUT/check.log" 2>&1 \
  || { tail -20 "$OUT/check.log"; echo "gpu_attention_kernels: the check failed"; exit 1; }
COMMITTED="bench/results/attention-kernels-$GPU_TAG.json"
MERGED="$OUT/attention-kernels-$GPU_TAG.json"
if [ -f "$COMMITTED" ]; then
  python3 bench/merge_results.py --replace "$COMMITTED" "$OUT/rows.json" --out "$MERGED" > /dev/null || exit 1
else
  cp "$OUT/rows.json" "$MERGED"
fi
python3 bench/attention_check.py --render "$MERGED" > /dev/null || exit 1
python3 - "$OUT/rows.json" <<'PY'
import json, sys
print("| problem | policy | FACT ms | SDPA ms | enable_gqa ms | vs SDPA | kernel |")
print("|---|---|---|---|---|---|---|")
for r in json.load(open(sys.argv[1]))["rows"]:
    if not r.get("verified"):
        print(f"| {r['problem']} | {r['policy']} | NOT VERIFIED | | | | {', '.join(r.get('kernels', []))} |")
        continue
    sdpa = r["baselines_ms"].get("sdpa")
    print(f"| {r['problem']} | {r['policy']} | {r['fact_ms']} | {sdpa} | {r.get('sdpa_gqa_ms')} | "
          f"{sdpa / r['fact_ms']:.3f}x | {r['kernels'][0]} |")
PY
