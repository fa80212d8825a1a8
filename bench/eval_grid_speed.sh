#!/bin/bash
# The cost of a `tova eval` grid against the separate runs it replaces (docs/RESULTS.md (e),
# "Speed"): 4 policies x 3 budgets on niah-13m's single needles as ONE command (every
# configuration of a prompt in shared forward passes, riding along until it first evicts),
# against 12 commands of one configuration each, the whole wall time of each command counted
# (loading the model and building the samples included), and the CPU time (user + system) beside
# it. ROUNDS rounds, each the grid then the 12 commands, so that a drift of the machine's speed
# falls on both; the ratio is of the sums over the rounds, with each round's beside it. Run it
# under `quiet`.
# Usage: bench/eval_grid_speed.sh [TOVA_BINARY] [SHARED_DIR] [SAMPLES] [THREADS] [ROUNDS]
set -euo pipefail
source "$(dirname "$0")/eval_grid_setup.sh"
rounds=${5:-1}

# "wall cpu" seconds of one command
timed() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{printf "%.3f %.3f\n", $1, $2 + $3}'
}
sum() { awk -v a="$1" -v b="$2" 'BEGIN{split(a, x, " "); split(b, y, " "); print x[1] + y[1], x[2] + y[2]}'; }

gw=0 gc=0 sw=0 sc=0
for r in $(seq "$rounds"); do
  g=$(timed "$T" eval "${common[@]}" --policies "$(IFS=,; echo "${P[*]}")" \
        --budgets "$(IFS=,; echo "${B[*]}")")
  s="0 0"
  for p in "${P[@]}"; do
    for b in "${B[@]}"; do
      s=$(sum "$s" "$(timed "$T" eval "${common[@]}" --policies "$p" --budgets "$b")")
    done
  done
  read -r w c <<<"$g"
  read -r w2 c2 <<<"$s"
  awk -v r="$r" -v w="$w" -v c="$c" -v w2="$w2" -v c2="$c2" 'BEGIN{
    printf "round %d: grid %.1f s (cpu %.1f s), separate %.1f s (cpu %.1f s): %.2fx wall, %.2fx cpu\n",
           r, w, c, w2, c2, w / w2, c / c2}'
  gw=$(awk -v a="$gw" -v b="$w" 'BEGIN{print a + b}'); gc=$(awk -v a="$gc" -v b="$c" 'BEGIN{print a + b}')
  sw=$(awk -v a="$sw" -v b="$w2" 'BEGIN{print a + b}'); sc=$(awk -v a="$sc" -v b="$c2" 'BEGIN{print a + b}')
done
awk -v gw="$gw" -v gc="$gc" -v sw="$sw" -v sc="$sc" -v n="$rounds" 'BEGIN{
  printf "grid (1 command, 12 configurations): %.1f s (cpu %.1f s) per round\n", gw / n, gc / n
  printf "separate (12 commands):              %.1f s (cpu %.1f s) per round\n", sw / n, sc / n
  printf "ratio grid / separate:               %.2f wall, %.2f cpu\n", gw / sw, gc / sc}'
