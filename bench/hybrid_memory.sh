#!/usr/bin/env bash
# What the bounded hybrid buys (issue 34), on a Qwen3.5-shape model: `tova make-random --arch
# qwen35` (the Qwen3.5 layer pattern, three Gated DeltaNet layers before each gated attention
# layer, scaled down so that it runs in minutes).
#   1. Peak RSS of `tova ppl --stream` (README: "Memory stays flat for bounded policies") over
#      the first N tokens of a long text, for N in $TOKENS, under tova k=512 and under full:
#      the bounded hybrid's memory does not grow with N, full's does.
#   2. The paper's Table 1 (`tova throughput`): at the memory of 8 full sequences of 4,096
#      tokens, how many bounded sequences fit (each carries its recurrent states whole) and their
#      aggregate tok/s.
# Usage: bench/hybrid_memory.sh BUILD_DIR OUT_DIR [TOKENS...]   (default TOKENS: 10000 50000 100000)
# Everything runs under `nice -n 19` on 1 thread (ppl) / 2 threads (throughput).
set -euo pipefail
build=${1:?BUILD_DIR}
out=${2:?OUT_DIR}
shift 2
if [ $# -gt 0 ]; then tokens=("$@"); else tokens=(10000 50000 100000); fi
tova="$build/bin/tova"
shared=${TOVA_SHARED_DIR:-$(dirname "$0")/../../shared}
mkdir -p "$out"
model="$out/qwen35-f32.gguf"
[ -f "$model" ] || nice -n 19 "$tova" make-random --arch qwen35 --type f32 -o "$model" -t 1 >/dev/null
# A long text: the bundled books, one after another.
text="$out/books.txt"
[ -f "$text" ] || cat "$shared"/texts/pride-and-prejudice.txt "$shared"/texts/tinystories-val-1000.txt \
  "$shared"/texts/pg19-test-10146.txt "$shared"/texts/pg19-test-10321.txt >"$text"

echo "| tokens | policy | peak RSS (MiB) | wall s |" >"$out/rss.md"
echo "|---:|---|---:|---:|" >>"$out/rss.md"
for n in "${tokens[@]}"; do
  for cfg in "tova 512" "full 0"; do
    read -r policy budget <<<"$cfg"
    args=(--kv-policy "$policy")
    [ "$policy" = full ] && args+=(--max-full-ctx "$n") || args+=(--kv-budget "$budget")
    start=$(date +%s.%N)
    /usr/bin/time -o "$out/time.txt" -f '%M' nice -n 19 "$tova" ppl -m "$model" -t 1 --stream \
      -f "$text" -c "$n" --window 10000 "${args[@]}" >"$out/ppl-$policy-$n.txt" 2>"$out/ppl-$policy-$n.err"
    end=$(date +%s.%N)
    kb=$(tail -1 "$out/time.txt")
    awk -v n="$n" -v p="$policy${budget:+ k=$budget}" -v kb="$kb" -v s="$start" -v e="$end" \
      'BEGIN { if (p == "full k=0") p = "full"; printf "| %d | %s | %.1f | %.0f |\n", n, p, kb / 1024, e - s }' >>"$out/rss.md"
  done
done
cat "$out/rss.md"

nice -n 19 "$tova" throughput -m "$model" -t 2 --full-batch 8 -c 4096 --kv-policy full,tova \
  --kv-budget 256,512,1024 -r 2 --steps 8 --out "$out/table1" --force
