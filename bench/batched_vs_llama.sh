#!/usr/bin/env bash
# Batched decode side by side with llama.cpp's llama-batched-bench: B sequences of DEPTH tokens
# each (every sequence prefilled on its own, no shared prompt), then TG decode steps of all B
# together; aggregate decode tokens/s. Runs alternate between the two engines, ROUNDS times.
#
#   LLAMA_BIN=/path/to/llama.cpp/build/bin bench/batched_vs_llama.sh MODEL.gguf [B] [DEPTH] [TG] [ROUNDS]
#
# llama.cpp is built outside this repository (see docs/PERFORMANCE.md for the commit and flags).
# tova's side is `tova throughput` with a `full` cache, --batch-cap B and a K/V budget large
# enough for B sequences: the same B, depth, threads and f16 K/V.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: $0 MODEL.gguf [B] [DEPTH] [TG] [ROUNDS]}
B=${2:-64}
depth=${3:-256}
tg=${4:-32}
rounds=${5:-3}
threads=${THREADS:-2}
llama_bin=${LLAMA_BIN:?set LLAMA_BIN to the build/bin folder of llama.cpp}
ctx=$((B * (depth + tg) + 256))

for r in $(seq 1 "$rounds"); do
  echo "== round $r: llama-batched-bench (-fa off)"
  "$llama_bin/llama-batched-bench" -m "$model" -c "$ctx" -b 2048 -ub 512 -npp "$depth" \
    -ntg "$tg" -npl "$B" -t "$threads" -fa off --output-format jsonl 2>/dev/null |
    grep '^{' | sed 's/^/llama.cpp /'
  echo "== round $r: tova throughput"
  ./build/bin/tova throughput -m "$model" --ctx "$depth" --kv-policy full --kv-type f16 \
    --kv-memory 64G --batch-cap "$B" --steps "$tg" -r 1 --warmup 2 -t "$threads" -o json |
    sed 's/^/tova /'
done
