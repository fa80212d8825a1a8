#!/bin/bash
# The cost of a `tova eval` grid against the separate runs it replaces (docs/RESULTS.md (e),
# "Speed"): 4 policies x 3 budgets on niah-13m's single needles as ONE command (every
# configuration of a prompt in shared forward passes, riding along until it first evicts),
# against 12 commands of one configuration each, the whole wall time of each command counted
# (loading the model and building the samples included). Run it under `quiet`.
# Usage: bench/eval_grid_speed.sh [TOVA_BINARY] [SHARED_DIR] [SAMPLES] [THREADS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
T=${1:-$here/build/bin/tova}
S=${2:-$here/../shared}
n=${3:-4}
t=${4:-2}
P=(window h2o tova snapkv)
B=(128 256 512)
common=(niah_single -m "$S/models/niah-13m-f16.gguf" --template "$S/models/niah-13m.templates.json"
        --lengths 2048 --samples "$n" -t "$t" --no-plot)

now() { date +%s.%N; }
t0=$(now)
"$T" eval "${common[@]}" --policies "$(IFS=,; echo "${P[*]}")" --budgets "$(IFS=,; echo "${B[*]}")" \
  >/dev/null 2>&1
t1=$(now)
for p in "${P[@]}"; do
  for b in "${B[@]}"; do
    "$T" eval "${common[@]}" --policies "$p" --budgets "$b" >/dev/null 2>&1
  done
done
t2=$(now)
grid=$(awk "BEGIN{print $t1 - $t0}")
separate=$(awk "BEGIN{print $t2 - $t1}")
printf 'grid (1 command, 12 configurations): %.1f s\n' "$grid"
printf 'separate (12 commands):              %.1f s\n' "$separate"
printf "ratio grid / separate:               %.2f\n" "$(awk "BEGIN{print $grid / $separate}")"
