#!/bin/bash
# Direction, not timing: per verify step of n tokens on one thread, with the weights repacked at
# load (q4_0_r8) or not, the process's user CPU time and, where the machine lends its counters,
# user-mode cycles and instructions (`perf stat` over bench_verify_step's fixed-count mode,
# TOVA_BENCH_PROFILE=n TOVA_BENCH_COUNT=N, minus a run of 0 steps: the load, the repack and the
# prefill). Counts of the process's own work move far less on a loaded machine than wall time
# does, but caches and memory shared with other work still move them: a quiet window's
# bench/verify_before_after.sh is the measurement.
#
# Usage: bench/repack_perf_stat.sh BENCH_VERIFY_STEP MODEL.gguf
# Environment: STEPS [1 2 4 8], SIMDS [avx3_dl avx2], COUNT [30], DEPTH [128]
set -euo pipefail
bench=${1:?usage: bench/repack_perf_stat.sh build/bin/bench_verify_step MODEL.gguf}
model=${2:?}
steps=${STEPS:-1 2 4 8} simds=${SIMDS:-avx3_dl avx2} count=${COUNT:-30} depth=${DEPTH:-128}
# "USER_NS CYCLES INSTRUCTIONS" of one run (0 where a counter is not supported)
counts() {
  env TOVA_BENCH_MODEL="$model" TOVA_BENCH_THREADS=1 TOVA_BENCH_DEPTH="$depth" "$@" \
    perf stat -x, -e user_time,cycles:u,instructions:u "$bench" 2>&1 >/dev/null |
    awk -F, 'function v(x) { return x ~ /^[0-9.]+$/ ? x : 0 }
             /user_time/ {u = v($1)} /cycles:u/ {c = v($1)} /instructions:u/ {i = v($1)}
             END {print u + 0, c + 0, i + 0}'
}
echo "| simd | repack | n | user ms/step | Mcycles/step | Minstr/step | user ms / n=1's |"
echo "|---|---|---|---|---|---|---|"
for simd in $simds; do
  for repack in 0 1; do
    read -r u0 c0 i0 < <(counts TOVA_BENCH_SIMDS="$simd" TOVA_BENCH_REPACK=$repack \
      TOVA_BENCH_PROFILE=1 TOVA_BENCH_COUNT=0)
    base=""
    for n in $steps; do
      read -r u c i < <(counts TOVA_BENCH_SIMDS="$simd" TOVA_BENCH_REPACK=$repack \
        TOVA_BENCH_PROFILE="$n" TOVA_BENCH_COUNT="$count")
      ms=$(python3 -c "print(($u - $u0) / $count / 1e6)")
      [ -z "$base" ] && base=$ms
      python3 -c "
u, c, i, base = $ms, ($c - $c0) / $count / 1e6, ($i - $i0) / $count / 1e6, $base
cs = f'{c:.1f}' if $c > 0 else '-'
ins = f'{i:.1f}' if $i > 0 else '-'
print(f'| $simd | $repack | $n | {u:.2f} | {cs} | {ins} | {u / base:.2f} |')"
    done
  done
done
