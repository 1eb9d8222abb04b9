#!/usr/bin/env bash
# The engine under AddressSanitizer and UndefinedBehaviorSanitizer, and its readers fuzzed
# (README "Run all tests"; docs/10-bad-inputs.md). Needs clang and libclang-rt-dev
# (scripts/setup.sh installs them) and, for the engine, what scripts/setup.sh set up.
#   1. build-san/: factc, the engine tests and the five libFuzzer targets (fuzz_graph_json,
#      fuzz_graph_text, fuzz_plan, fuzz_registry_import, fuzz_realized), built by clang with
#      -fsanitize=address,undefined (every UB report stops the program);
#   2. the engine tests but the real kernel compiles (ctest -E Compile, which the plain build
#      runs) and factc's flag tests (tests/cli) against the sanitized factc;
#   3. each fuzzer for FACT_FUZZ_SECONDS (default 60, seed FACT_FUZZ_SEED, default 1) from its seed corpus
#      tests/fuzz/corpus/<target>/, two at a time. A crash, leak, sanitizer report or an input
#      slower than 10 s fails the run; the input is left in build-san/fuzz/findings/ (add it
#      to the corpus with the fix: tests/fuzz/README.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$PATH:/usr/local/cuda/bin"
B=build-san
SECONDS_EACH="${FACT_FUZZ_SECONDS:-60}"
# A fixed seed by default, so a CI run repeats: new findings come from longer local runs
# (FACT_FUZZ_SEED=0 lets libFuzzer pick one).
SEED="${FACT_FUZZ_SEED:-1}"
JOBS="${FACT_JOBS:-$(nproc)}"
# -O1 with line tables: the usual sanitizer build (readable stacks, tests not much slower).
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DFACT_SANITIZE=ON >/dev/null
FUZZERS="graph_json graph_text plan registry_import realized"
cmake --build "$B" -j "$JOBS" --target factc fact_tests $(for t in $FUZZERS; do printf 'fuzz_%s ' "$t"; done)

# protect_shadow_gap=0: the CUDA runtime maps memory where ASan's shadow gap would be.
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
# The real kernel compiles (nvcc, minutes each) are the plain build's; here they are skipped.
FACT_SKIP_NVCC_TESTS=1 ctest --test-dir "$B" --output-on-failure -j "$JOBS" -E Compile
FACT_FACTC="$ROOT/$B/factc" .venv/bin/python -m pytest -q tests/cli

rm -rf "$B/fuzz" && mkdir -p "$B/fuzz/findings"
fuzz() {
  local t="$1"
  mkdir -p "$B/fuzz/$t"
  # New inputs go to build-san/fuzz/<target>/; the seeds in the tree are only read.
  if ! "$B/fuzz_$t" -max_total_time="$SECONDS_EACH" -seed="$SEED" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$B/fuzz/findings/$t-" "$B/fuzz/$t" "tests/fuzz/corpus/$t" >"$B/fuzz/$t.log" 2>&1; then
    tail -60 "$B/fuzz/$t.log"
    echo "sanitize: fuzz_$t found a problem; the input is in $B/fuzz/findings/" >&2
    return 1
  fi
  echo "sanitize: fuzz_$t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$B/fuzz/$t.log" | grep -o '[0-9]*$') inputs in ${SECONDS_EACH} s, no finding"
}
status=0
set -- $FUZZERS
while [ $# -gt 0 ]; do
  pids=()
  for t in "$1" "${2:-}"; do
    [ -n "$t" ] || continue
    fuzz "$t" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  shift $(( $# > 1 ? 2 : 1 ))
done
exit $status
