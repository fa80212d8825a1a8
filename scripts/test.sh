#!/usr/bin/env bash
# Runs the whole test suite: the Release build, then one pass under AddressSanitizer and
# UndefinedBehaviorSanitizer. Expects scripts/setup.sh to have run (README's second command).
set -euo pipefail
cd "$(dirname "$0")/.."
export TOVA_SHARED_DIR=${TOVA_SHARED_DIR:-$(cd .. && pwd)/shared}
jobs=$(nproc)

echo "== tests (Release) =="
ctest --test-dir build --output-on-failure -j "$jobs"

if [ "${TOVA_SKIP_SANITIZE:-0}" != "1" ]; then
  echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer) =="
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOVA_SANITIZE=ON \
        -DTOVA_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    TOVA_SANITIZE_RUN=1 ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi
