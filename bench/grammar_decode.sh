#!/bin/bash
# Decode speed with a JSON-schema mask against unmasked at a 150k-token vocabulary (issue 35,
# docs/PERFORMANCE.md "Constrained decoding at a 150k vocabulary"): `tova run` on a random-weight
# model of Qwen3-0.6B's shape (its real 151,936-token vocabulary), the same prompt and sampling,
# once unconstrained (--ignore-eos, N tokens) and once with --json-schema (until the JSON is
# complete, at most N tokens), alternating from round to round; prints each run's decode tok/s
# (passes and sampling together, as `tova run` reports them) and the ratio of the sums. A
# random-weight model is the mask's worst case: its draws are near-uniform over the vocabulary,
# so in most places the first draw is refused and the full mask is built.
#
# Usage: bench/grammar_decode.sh [MODEL]
#   MODEL   default: /tmp/tova-qwen3-0.6b-random-q4_0.gguf, made by `tova make-random` if missing
# Environment (defaults in brackets):
#   N [64]  tokens per run   ROUNDS [3]   THREADS [2]   SCHEMA [tests/data/grammar/person.schema.json]
#   SAMPLING ["--temp 1 --top-k 0 --top-p 1 --min-p 0": the whole distribution]
#   TOVA    tova binary [build/bin/tova]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
T=${TOVA:-$here/build/bin/tova}
model=${1:-/tmp/tova-qwen3-0.6b-random-q4_0.gguf}
n=${N:-64}
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
schema=${SCHEMA:-$here/tests/data/grammar/person.schema.json}
read -r -a sampling <<<"${SAMPLING:---temp 1 --top-k 0 --top-p 1 --min-p 0}"
if [ ! -f "$model" ]; then
  "$T" make-random --shape qwen3-0.6b --type q4_0 -o "$model" >&2
fi

# decode tok/s and tokens generated of one run (stderr of tova run).
run() {
  local log
  log=$("$T" run -m "$model" -t "$threads" -p "A person, as JSON:" -n "$n" -s 7 "${sampling[@]}" \
        --no-display-prompt "$@" 2>&1 >/dev/null)
  sed -n 's/^decode *: *\([0-9]*\) tokens in *\([0-9.]*\) ms.*; \([0-9]*\) generated.*/\1 \2 \3/p' <<<"$log"
}

printf '%-6s %-7s %8s %10s %9s\n' round mode decoded ms tok/s
plain_n=0; plain_ms=0; mask_n=0; mask_ms=0
for r in $(seq "$rounds"); do
  for mode in plain schema; do
    if [ "$mode" = plain ]; then
      read -r d ms g < <(run --ignore-eos)
      plain_n=$((plain_n + d)); plain_ms=$(echo "$plain_ms + $ms" | bc -l)
    else
      read -r d ms g < <(run --json-schema "$schema")
      mask_n=$((mask_n + d)); mask_ms=$(echo "$mask_ms + $ms" | bc -l)
    fi
    printf '%-6s %-7s %8s %10s %9.2f\n' "$r" "$mode" "$d" "$ms" "$(echo "$d * 1000 / $ms" | bc -l)"
  done
done
plain=$(echo "$plain_n * 1000 / $plain_ms" | bc -l)
mask=$(echo "$mask_n * 1000 / $mask_ms" | bc -l)
printf 'plain %.2f tok/s, schema %.2f tok/s: masked/plain = %.3f\n' "$plain" "$mask" \
  "$(echo "$mask / $plain" | bc -l)"
