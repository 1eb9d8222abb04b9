#!/usr/bin/env bash
# The attention suite at module level with the sm90 attention kernel in the space, on the
# 16-core H200 machine, in under 8 minutes; a short table last.
#   bash bench/gpu_attention.sh                 # TUNE_BUDGET=4 (the suite's), JOBS=16
# 1. factc: FACTC (default build/factc) when it runs, else built here (cmake + ninja, -j JOBS).
# 2. Every kernel the rows will build, compiled up front in parallel: each row's graph
#    (tests/golden/candidates/<example>.graph.json, the snapshot's exports of examples/) is
#    discovered under its policy, the plans of one policy are merged into one, and the three
#    policies' plans are built at once (`factc realize --no-gpu`, same budget: the same
#    sources, so the rows find them in the cache).
# 3. The rows one at a time (bench/suite.py attention, its --tune-budget), the bf16 Llama layer
#    first (gqa_attention_bf16: the sm90 kernel's row), then the committed ones, each into
#    rows/NAME-POLICY.json; a row that would not finish before DEADLINE_S is left out.
# 4. The rows merged into $OUT/attention-<gpu>.json (+ .md; <gpu> h100 or h200, from
#    nvidia-smi) and a table: FACT against eager,
#    torch.compile and the committed FACT time, the attention kernel chosen, and whether the
#    module-level ATen check kept it.
# Expected on the H200 machine (16 cores), 7-8 min in all: factc 3-4 min if it must be built
# (carry build/factc to skip it; then the deadline drops the last rows, never the bf16 one);
# step 2 about 100-120 s (about 20 kernels of 30-75 s: 8 CUTLASS GEMMs at tf32, 4 at fp32,
# the bf16 layer's GEMMs and 3 sm90 attention kernels, about 18 at once; sm80 attention
# kernels 2 s each); step 3 about 50-70 s a row with the cache warm (export, tuning, the
# float64 check, eager, torch.compile and FACT timed), 6 rows 5-6 min; step 4 seconds.
# Every row runs at most until DEADLINE_S + ROW_S = 460 s after the start.
# Writes env.txt, prebuild.log, rows.log, rows.tar.gz, attention-<gpu>.json/.md, table.md.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
start=$SECONDS
BUDGET="${TUNE_BUDGET:-4}"
JOBS="${JOBS:-16}"
DEADLINE_S="${DEADLINE_S:-400}"  # start no row that would end after this many seconds
ROW_S="${ROW_S:-60}"              # what one row is expected to take (each is cut at DEADLINE_S + ROW_S)
WORK=/tmp/fact-work
mkdir -p "$OUT/rows" /tmp/fact-prebuild
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  nvcc --version | tail -2
} > "$OUT/env.txt" 2>&1

# 1. factc
if ! "$FACT_FACTC" --version >/dev/null 2>&1; then
  echo "gpu_attention: building factc (-j $JOBS)"
  export FACT_FACTC="$ROOT/build-gpu/factc"
  { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j "$JOBS" --target factc; } \
    > "$OUT/factc-build.log" 2>&1 || { tail -20 "$OUT/factc-build.log"; echo "gpu_attention: factc did not build"; exit 1; }
  echo "gpu_attention: factc built at $((SECONDS - start)) s"
fi
"$FACT_FACTC" --version | tee -a "$OUT/env.txt"

# 2. Prebuild every row's kernels, the three policies at once.
ROWS=("gqa_attention_bf16:bf16")
while read -r r; do [ "$r" != "gqa_attention_bf16:bf16" ] && ROWS+=("$r"); done < <(python3 bench/suite.py attention --list)
for pol in tf32 bf16 fp32; do
  plans=()
  for r in "${ROWS[@]}"; do
    [ "${r##*:}" = "$pol" ] || continue
    n="${r%%:*}"
    "$FACT_FACTC" discover "tests/golden/candidates/attention__$n.graph.json" --policy "$pol" \
      -o "/tmp/fact-prebuild/$n-$pol.plan.json" && plans+=("/tmp/fact-prebuild/$n-$pol.plan.json")
  done
  [ ${#plans[@]} -gt 0 ] || continue
  python3 - "/tmp/fact-prebuild/all-$pol.plan.json" "${plans[@]}" <<'EOF'
import json, os, sys
merged = None
for path in sys.argv[2:]:
    plan = json.load(open(path))
    for p in plan["patterns"]:
        p["id"] = os.path.basename(path).split(".")[0] + "/" + p["id"]
    if merged is None:
        merged = plan
    else:
        merged["patterns"] += plan["patterns"]
json.dump(merged, open(sys.argv[1], "w"))
EOF
  # The three builds share the cores: 7/16, 7/16 and 1/4 of JOBS (fp32 has the fewest kernels;
  # 18 nvcc processes on 16 cores, about 63 GB of memory at 3.5 GB each).
  if [ "$pol" = fp32 ]; then share=$((JOBS / 4)); else share=$((JOBS * 7 / 16)); fi
  "$FACT_FACTC" realize "/tmp/fact-prebuild/all-$pol.plan.json" --policy "$pol" --no-gpu --tune-budget "$BUDGET" \
    --jobs "$((share > 0 ? share : 1))" -o "/tmp/fact-prebuild/realized-$pol.json" > "/tmp/fact-prebuild/$pol.log" 2>&1 &
done
wait
cat /tmp/fact-prebuild/*.log > "$OUT/prebuild.log"
grep -h "^realize:" /tmp/fact-prebuild/*.log
echo "gpu_attention: kernels prebuilt at $((SECONDS - start)) s"

# 3. The rows.
for r in "${ROWS[@]}"; do
  n="${r%%:*}"; pol="${r##*:}"
  if [ $((SECONDS - start + ROW_S)) -gt "$DEADLINE_S" ]; then
    echo "gpu_attention: no time left for $r (deadline $DEADLINE_S s)"; continue
  fi
  echo "== $r at $((SECONDS - start)) s"
  # A row may run until the deadline plus one row's time, no longer (the suite kills it).
  python3 bench/suite.py attention --only "$n" --precision "$pol" --out "$OUT/rows/$n-$pol.json" --work "$WORK" \
    --tune-budget "$BUDGET" --jobs "$JOBS" --timeout "$((DEADLINE_S + ROW_S - (SECONDS - start)))"
done 2>&1 | tee "$OUT/rows.log"

# 4. Merge and tabulate.
GPU_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -o 'H[12]00' | tr 'H' 'h')
GPU_TAG=${GPU_TAG:-h200}
COMMITTED=bench/results/attention-$GPU_TAG.json  # the committed rows of the same GPU
[ -f "$COMMITTED" ] || COMMITTED=bench/results/attention-h200.json
python3 bench/merge_results.py "$OUT"/rows/*.json --out "$OUT/attention-$GPU_TAG.json" > /dev/null
python3 - "$OUT/attention-$GPU_TAG.json" "$COMMITTED" <<'EOF' | tee "$OUT/table.md"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
committed = {(r["problem"], r["policy"]): r["fact_ms"] for r in json.load(open(sys.argv[2]))["rows"]}
print("| problem | policy | FACT ms | committed | eager | torch.compile | attention kernel | ATen check (kernel / ATen ms) |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    b = r.get("baselines_ms", {})
    attn = next((k for k in r.get("kernels", []) if k.startswith("fact_attn_")), "ATen")
    checks = "; ".join(f"{'kept' if c.get('kept') else 'ATen'} {c.get('kernel_ms')} / {c.get('aten_ms')}"
                       for c in r.get("aten_checks", {}).values())
    old = committed.get((r["problem"], r["policy"]))
    print(f"| {r['problem']} | {r['policy']} | {r['fact_ms']} | {old if old is not None else '-'} | {b.get('eager')} "
          f"| {b.get('inductor')} | {attn} | {checks or '-'} |")
EOF
tar czf "$OUT/rows.tar.gz" -C "$OUT" rows && rm -rf "$OUT/rows"
echo "gpu_attention: done in $((SECONDS - start)) s"
