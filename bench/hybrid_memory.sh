#!/usr/bin/env bash
# What the bounded hybrid buys (issue 34), on a Qwen3.5-shape model: `tova make-random --arch
# qwen35` (the Qwen3.5 layer pattern, three Gated DeltaNet layers before each gated attention
# layer) with the attention layers widened to 8 K/V heads of 128 (--set), so that their K/V
# (8 KiB per token in f16 over the 2 attention layers) dominates the process's memory the way a
# real model's does, while the rest stays small enough to stream 100,000 tokens in minutes.
#   1. Peak RSS of `tova ppl --stream` (one sequence over the first N tokens of a long text)
#      under tova k=512 for N in $TOKENS (default 10000 50000 100000) and under full for N in
#      $FULL_TOKENS (default 5000 10000 20000: full's attention is quadratic in N, its memory
#      linear, so the growth shows long before 100,000 tokens): the bounded hybrid's memory
#      does not grow with N, full's grows by its K/V.
#   2. The paper's Table 1 (`tova throughput`): at the memory of 8 full sequences of 4,096
#      tokens, how many bounded sequences fit (each carries its recurrent states whole) and
#      their aggregate tok/s.
# Usage: bench/hybrid_memory.sh BUILD_DIR OUT_DIR
# Environment: TOKENS, FULL_TOKENS (space-separated), THREADS (ppl; default 1), NICE (default 19).
set -euo pipefail
build=${1:?BUILD_DIR}
out=${2:?OUT_DIR}
read -r -a tokens <<<"${TOKENS:-10000 50000 100000}"
read -r -a full_tokens <<<"${FULL_TOKENS:-5000 10000 20000}"
threads=${THREADS:-1}
nice_level=${NICE:-19}
tova="$build/bin/tova"
shared=${TOVA_SHARED_DIR:-$(dirname "$0")/../../shared}
mkdir -p "$out"
model="$out/qwen35-kv8x128-f32.gguf"
[ -f "$model" ] || nice -n "$nice_level" "$tova" make-random --arch qwen35 --type f32 \
  --set n_head=8 --set n_head_kv=8 --set head_dim=128 -o "$model" -t 1 >/dev/null
# A long text: the bundled books, one after another.
text="$out/books.txt"
[ -f "$text" ] || cat "$shared"/texts/pride-and-prejudice.txt "$shared"/texts/tinystories-val-1000.txt \
  "$shared"/texts/pg19-test-10146.txt "$shared"/texts/pg19-test-10321.txt >"$text"

echo "| tokens | policy | peak RSS (MiB) | wall s |" >"$out/rss.md"
echo "|---:|---|---:|---:|" >>"$out/rss.md"
run_ppl() {  # policy budget n
  local policy=$1 budget=$2 n=$3 args start end kb
  args=(--kv-policy "$policy")
  [ "$policy" = full ] && args+=(--max-full-ctx "$n") || args+=(--kv-budget "$budget")
  start=$(date +%s.%N)
  /usr/bin/time -o "$out/time.txt" -f '%M' nice -n "$nice_level" "$tova" ppl -m "$model" -t "$threads" \
    --stream -f "$text" -c "$n" --window 10000 "${args[@]}" >"$out/ppl-$policy-$n.txt" 2>"$out/ppl-$policy-$n.err"
  end=$(date +%s.%N)
  kb=$(tail -1 "$out/time.txt")
  awk -v n="$n" -v p="$policy" -v b="$budget" -v kb="$kb" -v s="$start" -v e="$end" \
    'BEGIN { if (p != "full") p = p " k=" b; printf "| %d | %s | %.1f | %.0f |\n", n, p, kb / 1024, e - s }' >>"$out/rss.md"
}
for n in "${tokens[@]}"; do run_ppl tova 512 "$n"; done
for n in "${full_tokens[@]}"; do run_ppl full 0 "$n"; done
cat "$out/rss.md"

nice -n "$nice_level" "$tova" throughput -m "$model" -t 2 --full-batch 8 -c 4096 --kv-policy full,tova \
  --kv-budget 256,512,1024 -r 2 --steps 8 --out "$out/table1" --force
