#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ (clang, ASan + UBSan) and runs one or all.
# Usage: scripts/fuzz.sh [TARGET|all] [SECONDS]     (default: all, 60 seconds each)
#        scripts/fuzz.sh --build                    (configure and build the whole tree only)
#        scripts/fuzz.sh campaign MINUTES [TARGET...]
#          every harness (or those named) for MINUTES each, one after the other, the corpus kept
#          between runs in $TOVA_FUZZ_CORPUS_DIR/TARGET (default ~/.cache/tova-fuzz: outside the
#          repository), each crash minimised (-minimize_crash) into tests/fuzz/regressions/TARGET/
#          and the harness started again for the rest of its time; one line per harness (date,
#          commit, minutes, inputs run, crashes, coverage) is appended to
#          $TOVA_FUZZ_CORPUS_DIR/campaigns.tsv, the log docs/RELIABILITY.md's tables come from.
#          On a shared machine: nice -n 19 scripts/fuzz.sh campaign 10
#        scripts/fuzz.sh table          (campaigns.tsv as the Markdown table docs/RELIABILITY.md keeps,
#                                        with each harness's total of inputs over all campaigns)
# Environment:
#   TOVA_FUZZ_RUNS=N        run each harness for N inputs instead of SECONDS (CI smoke pass)
#   TOVA_FUZZ_BUILD_DIR=D   build tree (default build-fuzz; scripts/test.sh shares it)
#   TOVA_FUZZ_JOBS=N        build jobs (default: every core)
#   TOVA_FUZZ_FLAGS="..."   extra libFuzzer flags (e.g. -jobs, -seed=1)
#   TOVA_FUZZ_CORPUS_DIR=D  campaign mode: where corpora and campaigns.tsv live (~/.cache/tova-fuzz)
#   TOVA_FUZZ_NO_BUILD=1    use the binaries already built (e.g. while another build runs there)
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

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The libFuzzer flags every run of harness $1 uses (artifacts under $2).
flags_of() {
  local t=$1 artifacts=$2
  local a=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -max_len="$(max_len_of "$t")"
           -artifact_prefix="$artifacts/" -print_final_stats=1)
  [ -f "tests/fuzz/dict/$t.dict" ] && a+=(-dict="tests/fuzz/dict/$t.dict")
  printf '%s\n' "${a[@]}"
}

# The seed folders of harness $1.
seeds_of() {
  echo "tests/fuzz/corpus/$1"
  # The real chat templates seed the Jinja harness from the shared folder (not copied here).
  if [ "$1" = jinja ] && [ -d "$TOVA_SHARED_DIR/templates" ]; then echo "$TOVA_SHARED_DIR/templates"; fi
}

if [ "${1:-}" = "table" ]; then
  table="${TOVA_FUZZ_CORPUS_DIR:-$HOME/.cache/tova-fuzz}/campaigns.tsv"
  [ -f "$table" ] || { echo "fuzz.sh: no $table yet (run a campaign)" >&2; exit 1; }
  awk -F'\t' 'NR == 1 { next }
    { total[$3] += $5
      printf "| %s | `%s` | %s | %s min | %d | %s | %s | %s | %d |\n", $1, $3, $2, $4, $5, $6, $7, $8, total[$3] }' \
    "$table" | sed '1i | date | harness | commit | time | inputs | crashes | cov | ft | inputs, all campaigns |\n|---|---|---|---|---|---|---|---|---|'
  exit 0
fi

if [ "${1:-}" = "campaign" ]; then
  minutes=${2:?usage: scripts/fuzz.sh campaign MINUTES [TARGET...]}
  shift 2
  if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(all_targets); fi
  for t in "${targets[@]}"; do
    all_targets | grep -x "$t" >/dev/null || { echo "fuzz.sh: unknown target '$t'" >&2; exit 2; }
  done
  root=${TOVA_FUZZ_CORPUS_DIR:-$HOME/.cache/tova-fuzz}
  table="$root/campaigns.tsv"
  mkdir -p "$root"
  [ -f "$table" ] || printf 'date\tcommit\tharness\tminutes\tinputs\tcrashes\tcov\tft\tcorpus\n' >"$table"
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
  if [ -z "${TOVA_FUZZ_NO_BUILD:-}" ]; then
    configure
    cmake --build "$build" -j "$jobs" --target tova_fuzzers
  fi
  total_crashes=0
  for t in "${targets[@]}"; do
    corpus="$root/$t"
    artifacts="$build/crashes/$t"
    mkdir -p "$corpus" "$artifacts" "$build/fuzz-logs" "tests/fuzz/regressions/$t"
    mapfile -t args < <(flags_of "$t" "$artifacts")
    mapfile -t seeds < <(seeds_of "$t")
    start=$(date +%s)
    deadline=$((start + minutes * 60))
    inputs=0 crashes=0 run=0 cov=0 ft=0
    # libFuzzer stops at a crash: note it, minimise it, and go on for the rest of the time.
    while [ $(($(date +%s) + 5)) -lt "$deadline" ]; do
      run=$((run + 1))
      log="$build/fuzz-logs/$t.campaign.$run.log"
      before=$(find "$artifacts" -type f ! -name 'slow-unit-*' | sort)
      # shellcheck disable=SC2206
      "$build/bin/fuzz_$t" "${args[@]}" -max_total_time=$((deadline - $(date +%s))) \
        ${TOVA_FUZZ_FLAGS:-} "$corpus" "${seeds[@]}" >"$log" 2>&1 || true
      n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
      if [ -z "$n" ]; then  # a crash: no final stats; the last status line's count
        n=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
      fi
      inputs=$((inputs + ${n:-0}))
      last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
      c=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last"); [ -n "$c" ] && cov=$c
      f=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last"); [ -n "$f" ] && ft=$f
      # (slow-unit-*: an input over 10 s that did not stop the run; reported, not a crash.)
      new=$(comm -13 <(echo "$before") <(find "$artifacts" -type f ! -name 'slow-unit-*' | sort) |
        grep -v '^$' || true)
      [ -z "$new" ] && break  # the time is up without a crash
      for a in $new; do
        crashes=$((crashes + 1))
        out="tests/fuzz/regressions/$t/$(basename "$a")"
        echo "fuzz $t: $(basename "$a") (log: $log); minimising into $out"
        grep -E '^==[0-9]+==ERROR|^SUMMARY|runtime error' "$log" | awk 'NR <= 3' || true
        case "$(basename "$a")" in
          crash-*)
            "$build/bin/fuzz_$t" -minimize_crash=1 -runs=10000 -max_len="$(max_len_of "$t")" \
              -exact_artifact_path="$out" "$a" >"$log.minimize" 2>&1 || true
            [ -f "$out" ] || cp "$a" "$out" ;;
          *) cp "$a" "$out" ;;  # a timeout, leak or memory blow-up: kept as it was
        esac
      done
    done
    secs=$(($(date +%s) - start))
    total_crashes=$((total_crashes + crashes))
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%d)" "$commit" "$t" \
      "$(awk -v s="$secs" 'BEGIN { printf "%.1f", s / 60 }')" "$inputs" "$crashes" "$cov" "$ft" \
      "$(find "$corpus" -type f | wc -l)" >>"$table"
    echo "fuzz $t: $inputs inputs in $secs s, $crashes crashes, cov $cov ft $ft ($table)"
  done
  if [ "$total_crashes" -gt 0 ]; then
    echo "fuzz.sh: $total_crashes crashes; minimised inputs under tests/fuzz/regressions/" >&2
    exit 1
  fi
  exit 0
fi

target=${1:-all}
seconds=${2:-60}
if [ "$target" = "all" ]; then
  mapfile -t targets < <(all_targets)
else
  all_targets | grep -x "$target" >/dev/null || {
    echo "fuzz.sh: unknown target '$target' (valid: all $(all_targets | tr '\n' ' '))" >&2
    exit 2
  }
  targets=("$target")
fi

if [ -z "${TOVA_FUZZ_NO_BUILD:-}" ]; then
  configure
  cmake --build "$build" -j "$jobs" --target tova_fuzzers
fi

failed=()
for t in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes" "$build/fuzz-logs"
  mapfile -t args < <(flags_of "$t" "$crashes")
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
  mapfile -t seeds < <(seeds_of "$t")
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
    grep -E 'ERROR|SUMMARY|Test unit written|fuzz_[a-z_]+: ' "$log" | awk 'NR <= 20' || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failures in: ${failed[*]} (reproducers under $build/crashes/)" >&2
  exit 1
fi
