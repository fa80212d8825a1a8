#!/bin/bash
# Writes tests/data/quant/ggml-TYPE.{blocks,f32}: blocks quantized by ggml's own quantizers and
# ggml's dequantization of them (scripts/ggml_quant_dump.cpp), for the weight types of
# mixture-of-experts files. tova must read these bytes to the same floats bit for bit
# (tests/kernels/test_quant.cpp, QuantGgml); ggml-TYPE.{act,dot}.f32: an activation row and the
# dot products of the weight rows with it from ggml's CPU backend (its Q8 activations and SIMD
# vec_dot, built for this machine: AVX-512), which tova's int8 dot products must match.
#
# ggml is built OUTSIDE the repository (never committed): LLAMA_DIR (default /work/ext/llama.cpp,
# libggml-base in $LLAMA_DIR/build/bin), upstream commit 34af94cd (../shared/ANCHORS.md); the
# sha256 of the sources that define the formats go to tests/data/quant/SOURCE-blocks.
#
#   scripts/make_quant_blocks.sh      (run from the repository root)
set -euo pipefail
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
OUT=tests/data/quant
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
g++ -std=c++17 -O2 -o "$TMP/ggml_quant_dump" scripts/ggml_quant_dump.cpp \
  -I"$LLAMA_DIR/ggml/include" -L"$LLAMA_DIR/build/bin" -lggml-cpu -lggml-base \
  -Wl,-rpath,"$LLAMA_DIR/build/bin"
mkdir -p "$OUT"
{
  echo "ggml tree: $LLAMA_DIR = upstream commit ${LLAMA_COMMIT:-34af94cd9ab277632e27caeec2d41de2fd091b31}"
  (cd "$LLAMA_DIR" && sha256sum ggml/src/ggml-quants.c ggml/src/ggml-common.h ggml/src/ggml-impl.h)
  echo "dumper: scripts/ggml_quant_dump.cpp TYPE 3 ROW ggml-TYPE.blocks ggml-TYPE.f32 ggml-TYPE.act.f32 ggml-TYPE.dot.f32"
} > "$OUT/SOURCE-blocks"
# Rows of 512 (two super-blocks) for the 256-blocks, 96 (three blocks) for the 32-blocks.
for spec in q2_K:512 q3_K:512 iq4_xs:512 iq4_nl:96 mxfp4:96; do
  type=${spec%%:*}
  row=${spec##*:}
  "$TMP/ggml_quant_dump" "$type" 3 "$row" "$OUT/ggml-$type.blocks" "$OUT/ggml-$type.f32" \
    "$OUT/ggml-$type.act.f32" "$OUT/ggml-$type.dot.f32"
  echo "$type: $(stat -c %s "$OUT/ggml-$type.blocks") bytes of blocks"
done
