#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ (clang, ASan + UBSan) and runs one or all.
# Usage: scripts/fuzz.sh [TARGET|all] [SECONDS]     (default: all, 60 seconds each)
#        scripts/fuzz.sh --build                    (configure and build the whole tree only)
# Environment:
#   TOVA_FUZZ_RUNS=N        run each harness for N inputs instead of SECONDS (CI smoke pass)
#   TOVA_FUZZ_BUILD_DIR=D   build tree (default build-fuzz; scripts/test.sh shares it)
#   TOVA_FUZZ_JOBS=N        build jobs (default: every core)
#   TOVA_FUZZ_FLAGS="..."   extra libFuzzer flags (e.g. -jobs, -seed=1)
# One harness runs at a time on one core. New inputs go to BUILD/fuzz-corpus/TARGET (the seeds
# in tests/fuzz/corpus/TARGET are only read). A crash, timeout or memory blow-up leaves its
# reproducer under BUILD/crashes/TARGET/ and makes the script exit non-zero; replay one with
#   BUILD/bin/fuzz_TARGET BUILD/crashes/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
export TOVA_SHARED_DIR=${TOVA_SHARED_DIR:-$(cd .. && pwd)/shared}
build=${TOVA_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${TOVA_FUZZ_JOBS:-$(nproc)}

configure() {
  local launcher=()
  # Paths relative to the build folder, no working directory in the hash: a fresh clone in
  # another folder reuses what an earlier build compiled (scripts/setup.sh does the same).
  command -v ccache >/dev/null &&
    launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=/;CCACHE_NOHASHDIR=true;ccache")
  # Line tables are all a sanitizer report needs (file:line in every frame); full debug info
  # made each file ~20 % slower to compile. SSE targets: see TOVA_HWY_DISABLED_TARGETS.
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
    -DTOVA_HWY_DISABLED_TARGETS="HWY_SSSE3|HWY_SSE4" \
    -DCMAKE_CXX_COMPILER=clang++ -DTOVA_FUZZ=ON -DTOVA_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
}

# The harness names, as registered in tests/fuzz/CMakeLists.txt.
all_targets() { sed -n 's/^tova_fuzz_target(\([a-z0-9_]*\) .*/\1/p' tests/fuzz/CMakeLists.txt; }

# Per-harness limits. -rss_limit_mb / -malloc_limit_mb: a hostile count must not make the
# engine allocate gigabytes; -timeout: nor loop (seconds per input).
max_len_of() {
  case "$1" in
    gguf_model) echo 32768 ;;
    tokenizer) echo 1024 ;;
    session_file) echo 65536 ;;
    jinja) echo 32768 ;;  # real chat templates run to ~16 KB
    *) echo 4096 ;;
  esac
}

if [ "${1:-}" = "--build" ]; then
  configure
  cmake --build "$build" -j "$jobs"
  exit 0
fi

target=${1:-all}
seconds=${2:-60}
if [ "$target" = "all" ]; then
  mapfile -t targets < <(all_targets)
else
  all_targets | grep -qx "$target" || {
    echo "fuzz.sh: unknown target '$target' (valid: all $(all_targets | tr '\n' ' '))" >&2
    exit 2
  }
  targets=("$target")
fi

configure
cmake --build "$build" -j "$jobs" --target tova_fuzzers

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes" "$build/fuzz-logs"
  args=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -max_len="$(max_len_of "$t")"
        -artifact_prefix="$crashes/" -print_final_stats=1)
  [ -f "tests/fuzz/dict/$t.dict" ] && args+=(-dict="tests/fuzz/dict/$t.dict")
  if [ -n "${TOVA_FUZZ_RUNS:-}" ]; then
    args+=(-runs="$TOVA_FUZZ_RUNS")
  else
    args+=(-max_total_time="$seconds")
  fi
  # shellcheck disable=SC2206
  args+=(${TOVA_FUZZ_FLAGS:-})
  log="$build/fuzz-logs/$t.log"
  echo "== fuzz $t: ${TOVA_FUZZ_RUNS:+$TOVA_FUZZ_RUNS runs}${TOVA_FUZZ_RUNS:-$seconds s} (log: $log) =="
  start=$(date +%s)
  seeds=("tests/fuzz/corpus/$t")
  # The real chat templates seed the Jinja harness from the shared folder (not copied here).
  [ "$t" = jinja ] && [ -d "$TOVA_SHARED_DIR/templates" ] && seeds+=("$TOVA_SHARED_DIR/templates")
  if "$build/bin/fuzz_$t" "${args[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$t")
  fi
  # The last status line (#execs, cov, ft) and the final stats.
  grep -E '^#[0-9]+' "$log" | tail -1 || true
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" || true
  echo "fuzz $t: $status in $(($(date +%s) - start)) s"
  if [ "$status" = FAILED ]; then
    grep -E 'ERROR|SUMMARY|Test unit written|fuzz_[a-z_]+: ' "$log" | head -20 || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failures in: ${failed[*]} (reproducers under $build/crashes/)" >&2
  exit 1
fi
