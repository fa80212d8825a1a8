#!/bin/bash
# Where the CPU time of bench/eval_grid_speed.sh's two sides goes (docs/RESULTS.md (e), "Speed"):
# `perf record` (cpu-clock samples, so CPU time, every thread and child counted) of the grid
# command and of the 12 separate commands, the samples summed per part of the forward pass:
# matmuls of many tokens (the token-lane kernel, its F16 -> F32 weight conversion, its stores
# and activation layout), matmuls of few tokens (the row tiles: answer tokens), attention
# (scores, softmax, outputs), the policies, everything else. For each part: CPU seconds of both
# sides and their ratio; then what the whole ratio would be if that part cost nothing on both
# sides (a kernel speed-up serves the separate runs as well as the grid). Run it under `quiet`.
# Usage: bench/eval_grid_profile.sh [TOVA_BINARY] [SHARED_DIR] [SAMPLES] [THREADS]
set -euo pipefail
source "$(dirname "$0")/eval_grid_setup.sh"
command -v perf >/dev/null || { echo "eval_grid_profile.sh: perf not found (linux-perf)" >&2; exit 1; }
hz=2000
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

perf record -q -e cpu-clock -F "$hz" -o "$dir/grid.data" -- "$T" eval "${common[@]}" \
  --policies "$(IFS=,; echo "${P[*]}")" --budgets "$(IFS=,; echo "${B[*]}")" >/dev/null 2>&1
cmds=""  # the 12 commands as one shell line, so that one recording holds them all
for p in "${P[@]}"; do
  for b in "${B[@]}"; do
    cmds+="$(printf '%q ' "$T" eval "${common[@]}" --policies "$p" --budgets "$b") >/dev/null 2>&1; "
  done
done
perf record -q -e cpu-clock -F "$hz" -o "$dir/sep.data" -- bash -c "$cmds" >/dev/null 2>&1

# "part samples" lines of one recording
parts() {
  perf report -i "$1" --no-children --sort symbol -g none -n --stdio 2>/dev/null |
    awk '/^ +[0-9.]+%/ {
      n = $2; sym = $0
      if (sym ~ /GemmFloatTile|FloatLanes|StoreChunk|PrepareActs/) p = "matmul_many"
      else if (sym ~ /GemvFloat|FloatRows/) p = "matmul_few"
      else if (sym ~ /attn_hwy::/) p = "attention"
      else if (sym ~ /tova::kv::/) p = "policies"
      else p = "other"
      s[p] += n; tot += n
    } END { for (p in s) print p, s[p]; print "total", tot }'
}
parts "$dir/grid.data" >"$dir/grid.txt"
parts "$dir/sep.data" >"$dir/sep.txt"
awk -v hz="$hz" -v n="$n" -v t="$t" '
  FNR == NR { g[$1] = $2; next } { s[$1] = $2 }
  END {
    printf "niah_single, %d samples of 2,048 tokens, window,h2o,tova,snapkv x 128,256,512, %d threads\n", n, t
    printf "%-13s %10s %12s %7s %22s\n", "part", "grid cpu s", "separate s", "ratio", "ratio if it cost 0"
    split("matmul_many matmul_few attention policies other total", order, " ")
    for (i = 1; i <= 6; ++i) {
      p = order[i]
      gs = g[p] / hz; ss = s[p] / hz
      rest = (s["total"] - s[p]) > 0 ? (g["total"] - g[p]) / (s["total"] - s[p]) : 0
      printf "%-13s %10.1f %12.1f %6.2fx", p, gs, ss, (ss > 0 ? gs / ss : 0)
      if (p != "total") printf " %21.2fx", rest
      printf "\n"
    }
  }' "$dir/grid.txt" "$dir/sep.txt"
