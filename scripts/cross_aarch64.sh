#!/usr/bin/env bash
# Cross-builds tova for aarch64 (Debian 12: g++-aarch64-linux-gnu, multiarch :arm64 libraries)
# into build-aarch64/ and runs the tova program and the kernel (and model) tests under
# qemu-aarch64, once on a NEON-only CPU and once per SVE vector length (128, 256, 512 bits).
# Usage: scripts/cross_aarch64.sh [quick | ci | install | gtest filter for test_kernels]
#        (default: every kernel test and every test_model test; qemu runs them far slower than a
#        CPU would). quick: every kernel suite but the matmul ones (Matmul.*, MatmulRealData.*),
#        with only the attention shapes of the bf16 and quantized K/V types and of one GQA family
#        (h8kv2): 197 tests on NEON, more with SVE (the per-target tests multiply by the targets),
#        and one golden per family (test_model's ArchGolden logits, F32).
#        ci: what scripts/test.sh runs (CI's bounded subset): quick on every CPU, the matmul
#        suites on NEON, and the goldens as quick does, on every CPU.
#        install: only install the packages.
# Env: TOVA_ARM_TESTS="test_kernels test_model" (programs to build and run),
#      TOVA_ARM_CPUS="neon sve128 sve256 sve512", TOVA_ARM_MODEL_FILTER (gtest filter, test_model),
#      TOVA_ARM_JOBS (build jobs; default nproc).
# ARM speed is not measured here: qemu emulates, its timings say nothing about a real ARM CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
mode=${1:-*}
kernel_filter=$mode
quick='Attention.*:DeltaNetKernels.*:KvRows.*:Quant*:SimdTarget.*:AllTargets/*:Shapes/*bf16*:Shapes/*q4_0*:Shapes/*q8_0*:Shapes/*vq*:Shapes/*h8kv2*'
model_filter=${TOVA_ARM_MODEL_FILTER:-*}
case "$mode" in
  quick|ci) kernel_filter=$quick
            model_filter=${TOVA_ARM_MODEL_FILTER:-'Families/ArchGolden.LogitsMatchLlamaCppAtEveryPosition/*'} ;;
esac
tests=(${TOVA_ARM_TESTS:-test_kernels test_model})
build_targets=(tova "${tests[@]}")
# CI: the goldens from test_arch_golden (test_model's golden tests linked against the model
# layer alone, tests/CMakeLists.txt), and no tova program: half the cross build.
[ "$mode" = ci ] && tests=(${TOVA_ARM_TESTS:-test_kernels test_arch_golden}) && build_targets=("${tests[@]}")
cpus=(${TOVA_ARM_CPUS:-neon sve128 sve256 sve512})

# Packages: the cross compiler, qemu's user-mode emulator and the arm64 builds of what tova
# links (CMakeLists.txt's find_package calls); the header-only ones are arch-independent (all).
packages=(g++-aarch64-linux-gnu qemu-user libc6:arm64 cmake ninja-build ccache pkg-config
          libhwy-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 libfmt-dev:arm64
          libcpp-httplib-dev:arm64 libstb-dev:arm64 nlohmann-json3-dev libcli11-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "cross_aarch64: installing ${missing[*]}" >&2
  dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
[ "$mode" = install ] && exit 0

launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=/;CCACHE_NOHASHDIR=true;ccache"
            "-DCMAKE_C_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=/;CCACHE_NOHASHDIR=true;ccache")
build_dir=${TOVA_ARM_BUILD_DIR:-build-aarch64}
# Test discovery at ctest time (PRE_TEST), not after each link: listing a test program runs it
# under qemu, which the build need not wait for.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DTOVA_PYTHON=OFF -DTOVA_BUILD_BENCH=OFF -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST \
  "${launcher[@]}" ${TOVA_CMAKE_ARGS:-} >&2
nice -n 5 cmake --build "$build_dir" -j "${TOVA_ARM_JOBS:-$(nproc)}" --target "${build_targets[@]}" >&2
echo "cross_aarch64: built in $((SECONDS - t0)) s" >&2

# qemu's CPU models: `max` has every extension qemu emulates (SVE2, i8mm, dotprod, ...);
# sve=off leaves NEON (with dotprod and i8mm); sve-default-vector-length is in bytes.
cpu_flags() {
  case "$1" in
    neon) echo "max,sve=off" ;;
    sve128) echo "max,sve-default-vector-length=16" ;;
    sve256) echo "max,sve-default-vector-length=32" ;;
    sve512) echo "max,sve-default-vector-length=64" ;;
    *) echo "cross_aarch64: unknown cpu '$1' (neon, sve128, sve256, sve512)" >&2; return 1 ;;
  esac
}
export TOVA_SHARED_DIR=${TOVA_SHARED_DIR:-$(cd .. && pwd)/shared}
# The programs run on the multiarch arm64 glibc (libc6:arm64, pulled in by the :arm64 packages
# above): its loader /lib/ld-linux-aarch64.so.1 and its libc.so.6 come from one build. Never point
# QEMU_LD_PREFIX at the cross toolchain's sysroot: its loader (libc6-arm64-cross) then loads the
# multiarch libc.so.6 of another Debian revision, the two disagree on the loader's private data,
# and the first pthread_create walks its thread-stack cache forever (docs/ARM.md).
unset QEMU_LD_PREFIX
[ -e /lib/ld-linux-aarch64.so.1 ] ||
  { echo "cross_aarch64: /lib/ld-linux-aarch64.so.1 missing (install libc6:arm64)" >&2; exit 1; }
fail=0
for cpu in "${cpus[@]}"; do
  flags=$(cpu_flags "$cpu")
  export QEMU_CPU=$flags
  # An unknown --simd name is refused with the list of the targets this (emulated) CPU runs:
  # Highway's run-time choice, best first (the kernel tests run every one of them).
  if [ "${build_targets[0]}" = tova ]; then
    targets=$(qemu-aarch64 "$build_dir/bin/tova" run --simd list 2>&1 | sed -n 's/.*(supported: \(.*\)).*/\1/p' || true)
    echo "=== $cpu (qemu-aarch64 -cpu $flags): SIMD targets: ${targets:-none found}" >&2
    [ -n "$targets" ] || fail=1
  else
    echo "=== $cpu (qemu-aarch64 -cpu $flags)" >&2
  fi
  for t in "${tests[@]}"; do
    filter=$kernel_filter
    [ "$mode" = ci ] && [ "$cpu" = neon ] && filter="$filter:Matmul.*:MatmulRealData.*"
    [ "$t" = test_model ] || [ "$t" = test_arch_golden ] && filter=$model_filter
    log=$build_dir/qemu-$cpu-$t.log
    t1=$SECONDS
    if qemu-aarch64 "$build_dir/bin/$t" --gtest_filter="$filter" >"$log" 2>&1; then
      status=passed
    else
      status=FAILED
      fail=1
    fi
    echo "$cpu $t: $status in $((SECONDS - t1)) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$log" | tr '\n' ' ') (log: $log)" >&2
    grep -E '^\[  (FAILED|SKIPPED) +\] [A-Za-z]' "$log" | sort -u >&2 || true
  done
done
echo "cross_aarch64: done in $((SECONDS - t0)) s" >&2
exit $fail
