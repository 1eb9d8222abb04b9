#!/usr/bin/env bash
# Runs a benchmark suite's problems one at a time on the GPU machine, each into its own
# result file, until a deadline: a run cut short keeps every finished row. Merge the files
# afterwards with bench/merge_results.py.
#   DEADLINE_S=520 SUITE=epilogue bash bench/gpu_rows.sh NAME ... [-- SUITE_ARGS ...]
# NAME runs every policy the suite has for the problem (rows/NAME.json); NAME:POLICY one run
# (rows/NAME-POLICY.json), e.g. L3-43_mingpt_attention:bf16; NAME:POLICY:DTYPE the run that
# converts the model first (rows/NAME-POLICY-DTYPE.json, e.g. llama3_8b_block:bf16:bfloat16,
# SUITE=blocks). Without names, every run of the
# suite, one by one (bench/suite.py SUITE --list):
#   SUITE=attention bash bench/gpu_rows.sh
# Expects FACTC (default build/factc), CUTLASS headers in .deps/cutlass and optionally a
# warm kernel cache in .kcache. Writes rows.tar.gz (rows/<name>.json and .md), rows.log and
# work.tar.gz (the runs' working directories), and the rows merged into $SUITE-h200.json and
# .md (printed last), to $OUT.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
mkdir -p "$OUT/rows"
SUITE="${SUITE:-epilogue}"
DEADLINE_S="${DEADLINE_S:-520}"   # start no new problem after this many seconds
ROW_S="${ROW_S:-100}"              # what one problem is expected to take
names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do names+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
if [ ${#names[@]} -eq 0 ]; then
  mapfile -t names < <(python3 bench/suite.py "$SUITE" --list)
fi
start=$SECONDS
for n in "${names[@]}"; do
  if [ $((SECONDS - start + ROW_S)) -gt "$DEADLINE_S" ]; then
    echo "gpu_rows: no time left for $n (deadline ${DEADLINE_S} s)"; continue
  fi
  echo "== $n at $((SECONDS - start)) s"
  case "$n" in
    *:*) run=(--only "$n" --out "$OUT/rows/${n//:/-}.json") ;;
    *)   run=(--only "$n" --out "$OUT/rows/$n.json") ;;
  esac
  python3 bench/suite.py "$SUITE" "${run[@]}" --work /tmp/fact-work "$@"
done 2>&1 | tee "$OUT/rows.log"
tar czf "$OUT/work.tar.gz" --exclude='*.so' --exclude='*.o' --exclude='params.pt' -C /tmp fact-work 2>/dev/null
# Only a few files come back from the GPU machine: the rows travel as one archive.
python3 bench/merge_results.py "$OUT"/rows/*.json --out "$OUT/$SUITE-h200.json" > /dev/null \
  && cat "$OUT/$SUITE-h200.md"
tar czf "$OUT/rows.tar.gz" -C "$OUT" rows && rm -rf "$OUT/rows"
echo "gpu_rows: done in $((SECONDS - start)) s"
