#!/bin/bash
# Issue 12's speed figures (docs/PERFORMANCE.md, "Position modes and session files"):
# 1. decode tok/s of --kv-positions gap and rank against absolute under tova at budget K,
#    runs alternating absolute, gap, rank, REPS times (greedy, -n N, --ignore-eos);
# 2. the size of a session file at budget K and the time to save it and to load it back
#    (a run of N tokens saves; a resumed run of 1 token loads, then saves again).
# Usage: bench/positions_speed.sh MODEL [K] [N] [REPS] [THREADS] [TOVA_BINARY]
# A model of TinyLlama-1.1B's shape: tova make-random --shape tinyllama --type q4_0 -o M.gguf
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
M=${1:?usage: bench/positions_speed.sh MODEL [K] [N] [REPS] [THREADS] [TOVA_BINARY]}
K=${2:-512}
N=${3:-1024}
reps=${4:-3}
t=${5:-2}
T=${6:-$here/build/bin/tova}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

decode_rate() {  # decode tok/s from tova run's report on stderr
  sed -n 's/^decode .*(\([0-9.]*\) tok\/s)/\1/p'
}

echo "model: $M, tova k=$K, -n $N, -t $t, $reps rounds alternating"
printf '%-6s %-9s %s\n' round positions decode_tok_s
for r in $(seq "$reps"); do
  for mode in absolute gap rank; do
    rate=$("$T" run -m "$M" -p "Once upon a time" -n "$N" --temp 0 --ignore-eos -t "$t" \
      --kv-policy tova --kv-budget "$K" --kv-positions "$mode" 2>&1 >/dev/null | decode_rate)
    printf '%-6s %-9s %s\n' "$r" "$mode" "$rate"
  done
done

echo
printf '%-6s %-9s %-12s %-12s %s\n' round positions file save_ms load_ms
for r in $(seq "$reps"); do
  for mode in absolute gap; do
    s="$work/s-$mode.bin"
    rm -f "$s"
    save=$("$T" run -m "$M" -p "Once upon a time" -n "$N" --temp 0 --ignore-eos -t "$t" \
      --kv-policy tova --kv-budget "$K" --kv-positions "$mode" --session "$s" 2>&1 >/dev/null |
      sed -n 's/^session save : \(.*\) in *\([0-9.]*\) ms/\1|\2/p')
    load=$("$T" run -m "$M" -n 1 --temp 0 --ignore-eos -t "$t" --session "$s" 2>&1 >/dev/null |
      sed -n 's/^session load : .* in *\([0-9.]*\) ms/\1/p')
    printf '%-6s %-9s %-12s %-12s %s\n' "$r" "$mode" "${save%%|*}" "${save##*|}" "$load"
  done
done
