#!/usr/bin/env bash
# Runs the whole test suite: the Release build, then one pass under AddressSanitizer and
# UndefinedBehaviorSanitizer (clang), then a short smoke pass of every fuzz harness. Expects
# scripts/setup.sh to have run (README's second command).
set -euo pipefail
cd "$(dirname "$0")/.."
export TOVA_SHARED_DIR=${TOVA_SHARED_DIR:-$(cd .. && pwd)/shared}
jobs=$(nproc)

echo "== tests (Release) =="
ctest --test-dir build --output-on-failure -j "$jobs"

if [ "${TOVA_SKIP_SANITIZE:-0}" != "1" ]; then
  # One clang build serves the sanitizer tests and the fuzz harnesses: the library is compiled
  # once with ASan + UBSan + -fsanitize=fuzzer-no-link (see scripts/fuzz.sh, tests/fuzz/).
  echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer, clang) =="
  TOVA_FUZZ_BUILD_DIR=build-fuzz TOVA_FUZZ_JOBS="$jobs" scripts/fuzz.sh --build
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    TOVA_SANITIZE_RUN=1 ctest --test-dir build-fuzz --output-on-failure -j "$jobs"

  if [ "${TOVA_SKIP_FUZZ_SMOKE:-0}" != "1" ]; then
    # Every harness for a fixed number of inputs (seeds first, then mutations): about a minute.
    echo "== fuzz smoke pass =="
    TOVA_FUZZ_BUILD_DIR=build-fuzz TOVA_FUZZ_RUNS=${TOVA_FUZZ_SMOKE_RUNS:-2000} scripts/fuzz.sh all
  fi
fi
