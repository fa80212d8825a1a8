#!/usr/bin/env bash
# Runs the whole test suite: the Release build's tests, then one pass under AddressSanitizer and
# UndefinedBehaviorSanitizer (clang) that leaves out the tests of tests/release_only.txt (each
# with its reason there), then a short smoke pass of every fuzz harness. Prints each phase's
# time and the slowest 20 tests of each pass. Expects scripts/setup.sh to have run (README's
# second command).
#   TOVA_SKIP_SANITIZE=1   the Release pass only
#   TOVA_SKIP_FUZZ_SMOKE=1 no fuzz smoke pass
#   TOVA_SKIP_ARM=1        no aarch64 pass (cross build + the bounded subset under qemu)
set -euo pipefail
cd "$(dirname "$0")/.."
export TOVA_SHARED_DIR=${TOVA_SHARED_DIR:-$(cd .. && pwd)/shared}
jobs=$(nproc)
logs=$(mktemp -d)

# The shared data folder is part of what CI tests: without it, say so once, up front.
if [ ! -d "$TOVA_SHARED_DIR/golden" ]; then
  echo "test.sh: the shared data folder $TOVA_SHARED_DIR is missing (set TOVA_SHARED_DIR)" >&2
  [ "${CI:-}" = true ] && exit 1
fi

phases=()
phase_start() { phase_name=$1; phase_t0=$SECONDS; echo "== $1 =="; }
phase_end() { phases+=("$(printf '%-62s %5d s' "$phase_name" $((SECONDS - phase_t0)))"); }
# The slowest 20 tests of a ctest log: seconds, name.
slowest() {
  echo "-- slowest 20 tests ($1) --"
  grep -E 'Test +#[0-9]+:' "$2" |
    awk '{t=$(NF-1); for (i=1;i<=NF;i++) if ($i ~ /^#[0-9]+:$/) {n=$(i+1); break}; printf "%8.2f s  %s\n", t, n}' |
    sort -rn | awk 'NR <= 20'  # awk reads all: head would SIGPIPE sort under pipefail
}
summary() {
  echo "== phase times =="
  printf '%s\n' "${phases[@]}"
}
trap 'summary; rm -rf "$logs"' EXIT

phase_start "tests (Release)"
ctest --test-dir build --output-on-failure -j "$jobs" 2>&1 | tee "$logs/release.log"
phase_end
slowest "Release" "$logs/release.log"

if [ "${TOVA_SKIP_ARM:-0}" != "1" ]; then
  # ARM: the cross build (g++-aarch64-linux-gnu) and CI's bounded subset under qemu-aarch64 on a
  # NEON CPU and SVE at 128, 256 and 512 bits: the kernel suites on every target each CPU runs,
  # the matmul suites on NEON, one golden per family (docs/ARM.md).
  phase_start "aarch64: cross build + kernel tests and family goldens under qemu"
  TOVA_ARM_JOBS="$jobs" scripts/cross_aarch64.sh ci
  phase_end
fi

if [ "${TOVA_SKIP_SANITIZE:-0}" != "1" ]; then
  # One clang build serves the sanitizer tests and the fuzz harnesses: the library is compiled
  # once with ASan + UBSan + -fsanitize=fuzzer-no-link (see scripts/fuzz.sh, tests/fuzz/).
  phase_start "build (AddressSanitizer + UndefinedBehaviorSanitizer, clang)"
  TOVA_FUZZ_BUILD_DIR=build-fuzz TOVA_FUZZ_JOBS="$jobs" scripts/fuzz.sh --build
  phase_end

  # Tests that run in the Release pass only (tests/release_only.txt: name regex # reason).
  exclude=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^[[:space:]]*$/d' tests/release_only.txt |
            paste -sd '|')
  echo "== in the Release pass only (tests/release_only.txt) =="
  ctest --test-dir build-fuzz -N -R "^($exclude)\$" | grep -E 'Test +#' || true
  phase_start "tests (AddressSanitizer + UndefinedBehaviorSanitizer, clang)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    TOVA_SANITIZE_RUN=1 ctest --test-dir build-fuzz --output-on-failure -j "$jobs" \
    -E "^($exclude)\$" 2>&1 | tee "$logs/sanitize.log"
  phase_end
  slowest "AddressSanitizer + UBSan" "$logs/sanitize.log"

  if [ "${TOVA_SKIP_FUZZ_SMOKE:-0}" != "1" ]; then
    # Every harness for a fixed number of inputs (seeds first, then mutations): about a minute.
    phase_start "fuzz smoke pass"
    TOVA_FUZZ_BUILD_DIR=build-fuzz TOVA_FUZZ_RUNS=${TOVA_FUZZ_SMOKE_RUNS:-2000} scripts/fuzz.sh all
    phase_end
  fi
fi
