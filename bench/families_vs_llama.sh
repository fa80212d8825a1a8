#!/bin/bash
# Issue 10's speed figures (docs/PERFORMANCE.md, "The newer families against llama.cpp"):
# prompt processing (pp512) and decode (tg128) at depth 0, full cache, f16 K/V, of random-weight
# models of Llama-3.2-1B's and Qwen3-0.6B's shapes in Q4_0 and Q8_0, `tova bench` and
# llama.cpp's `llama-bench` on the same file, alternating, ROUNDS times.
# Usage: LLAMA_BIN=/path/to/llama.cpp/build/bin bench/families_vs_llama.sh MODEL_DIR [ROUNDS] [THREADS]
# The models (written into MODEL_DIR when missing; llama3.2-1b Q4_0 is ~0.8 GB):
#   tova make-random --shape llama3.2-1b --type q4_0 -o MODEL_DIR/llama3.2-1b-q4_0.gguf
#   tova make-random --shape qwen3-0.6b --type q8_0 -o MODEL_DIR/qwen3-0.6b-q8_0.gguf   (...)
# llama.cpp is built outside the repository (never committed).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: LLAMA_BIN=... bench/families_vs_llama.sh MODEL_DIR [ROUNDS] [THREADS]}
rounds=${2:-2}
t=${3:-2}
T=${TOVA:-$here/build/bin/tova}
L=${LLAMA_BIN:?set LLAMA_BIN to the build/bin folder of llama.cpp}

mkdir -p "$dir"
models=()
for shape in llama3.2-1b qwen3-0.6b; do
  for type in q4_0 q8_0; do
    m="$dir/$shape-$type.gguf"
    [ -f "$m" ] || "$T" make-random --shape "$shape" --type "$type" -o "$m"
    models+=("$m")
  done
done

# One line per test: model engine test tok/s stddev.
tova_rates() {
  "$T" bench -m "$1" -p 512 -n 128 -r 3 -t "$t" --kv-type f16 -o json |
    node -e 'const r=JSON.parse(require("fs").readFileSync(0));
      for (const x of r) console.log((x.n_prompt>0?"pp":"tg")+(x.n_prompt||x.n_gen), x.avg_ts.toFixed(2), x.stddev_ts.toFixed(2));'
}
llama_rates() {
  "$L/llama-bench" -m "$1" -p 512 -n 128 -r 3 -t "$t" -ctk f16 -ctv f16 -o json 2>/dev/null |
    node -e 'const r=JSON.parse(require("fs").readFileSync(0));
      for (const x of r) console.log((x.n_prompt>0?"pp":"tg")+(x.n_prompt||x.n_gen), x.avg_ts.toFixed(2), x.stddev_ts.toFixed(2));'
}

printf '%-6s %-26s %-9s %-6s %s\n' round model engine test "tok/s ± sd"
for r in $(seq "$rounds"); do
  for m in "${models[@]}"; do
    name=$(basename "$m" .gguf)
    llama_rates "$m" | while read -r test ts sd; do
      printf '%-6s %-26s %-9s %-6s %s ± %s\n' "$r" "$name" llama.cpp "$test" "$ts" "$sd"
    done
    tova_rates "$m" | while read -r test ts sd; do
      printf '%-6s %-26s %-9s %-6s %s ± %s\n' "$r" "$name" tova "$test" "$ts" "$sd"
    done
  done
done
