#!/bin/bash
# Writes the quantized-model fixtures (tests/data/quant/moe-*.gguf) and their golden logits:
# the files people download are mixes that llama-quantize writes (MXFP4_MOE, Q3_K_M, Q2_K,
# IQ4_XS, IQ4_NL), so the fixtures are made by llama-quantize itself from one F32
# `tova make-random --shape tiny-quant-moe` file (qwen3moe, rows of 256 so that every tensor gets
# its file type's block type), plus one MXFP4 file written by tova itself (--type mxfp4).
# For each file, two goldens from llama.cpp:
#   NAME.logits.f32      llama.cpp on the quantized file (its default CPU path: activations
#                        rounded to Q8_0/Q8_K blocks for the integer dot products);
#   NAME.deq.logits.f32  llama.cpp on the same file dequantized to F32 by
#                        `llama-quantize --allow-requantize FILE OUT F32` (the weights' exact
#                        values, float32 activations).
# tests/model/quant_golden_test.cpp compares tova's default mode with the first and its
# --f32-activations mode with the second.
#
# llama.cpp is built OUTSIDE the repository (never committed): LLAMA_DIR (default
# /work/ext/llama.cpp; libllama and llama-quantize in $LLAMA_DIR/build/bin), upstream commit
# 34af94cd9ab277632e27caeec2d41de2fd091b31 (the commit ../shared/ANCHORS.md names).
#
#   scripts/make_quant_goldens.sh [BUILD_DIR]      (run from the repository root)
set -euo pipefail
BUILD=${1:-build}
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
SHARED=${TOVA_SHARED_DIR:-../shared}
OUT=tests/data/quant
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

g++ -std=c++17 -O2 -o "$TMP/llama_dump" scripts/llama_dump.cpp -I"$LLAMA_DIR/include" \
  -I"$LLAMA_DIR/ggml/include" -L"$LLAMA_DIR/build/bin" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$LLAMA_DIR/build/bin"
QUANTIZE="$LLAMA_DIR/build/bin/llama-quantize"

mkdir -p "$OUT"
{
  echo "llama.cpp tree: $LLAMA_DIR = upstream commit ${LLAMA_COMMIT:-34af94cd9ab277632e27caeec2d41de2fd091b31}"
  (cd "$LLAMA_DIR" && sha256sum include/llama.h src/llama-quant.cpp ggml/src/ggml-quants.c)
  echo "fixture: tova make-random --shape tiny-quant-moe --type f32 -s 1, then llama-quantize FILE OUT TYPE"
  echo "dumper: scripts/llama_dump.cpp MODEL tokens-128.json LOGITS 16 0 /dev/null"
} > "$OUT/SOURCE-models"

dump() {  # MODEL LOGITS
  "$TMP/llama_dump" "$1" "$SHARED/golden/tokens-128.json" "$2" 16 0 "$TMP/greedy.json" \
    2> "$TMP/dump.log" || { cat "$TMP/dump.log"; exit 1; }
}

"$BUILD/bin/tova" make-random --shape tiny-quant-moe --type f32 -s 1 -t 1 -o "$TMP/moe-f32.gguf"
for type in MXFP4_MOE Q3_K_M Q2_K IQ4_XS IQ4_NL; do
  name=moe-$(echo "$type" | tr 'A-Z' 'a-z')
  "$QUANTIZE" "$TMP/moe-f32.gguf" "$OUT/$name.gguf" "$type" > "$TMP/q.log" 2>&1 ||
    { cat "$TMP/q.log"; exit 1; }
done
# MXFP4 as tova writes it (every matrix MXFP4 except where the type cannot hold the row).
"$BUILD/bin/tova" make-random --shape tiny-quant-moe --type mxfp4 -s 1 -t 1 -o "$OUT/moe-tova-mxfp4.gguf"

for f in "$OUT"/moe-*.gguf; do
  name=$(basename "$f" .gguf)
  dump "$f" "$OUT/$name.logits.f32"
  "$QUANTIZE" --allow-requantize "$f" "$TMP/deq.gguf" F32 > "$TMP/q.log" 2>&1 ||
    { cat "$TMP/q.log"; exit 1; }
  dump "$TMP/deq.gguf" "$OUT/$name.deq.logits.f32"
  echo "$name: $(stat -c %s "$f") bytes"
done
