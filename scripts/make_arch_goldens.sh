#!/bin/bash
# Writes the architecture fixtures (tests/data/arch/*.gguf, by `tova make-random --arch`) and
# their golden data from llama.cpp: logits of every position of ../shared/golden/tokens-128.json
# and the 64-token greedy continuation of its first 16 tokens. The *-mtp fixtures carry a
# multi-token prediction block (nextn_predict_layers 1): llama.cpp's main model skips it, so
# their goldens are the main model's.
#
# llama.cpp is built OUTSIDE the repository (never committed): LLAMA_DIR (default
# /work/ext/llama.cpp, build in $LLAMA_DIR/build, CPU, Release). Goldens committed with this
# script were made on 2026-11-23 with llama.cpp upstream commit
# 34af94cd9ab277632e27caeec2d41de2fd091b31 (the commit ../shared/ANCHORS.md names; checked out
# without git metadata, so its build reports LLAMA_COMMIT "unknown"). The script records the
# sha256 of include/llama.h and src/llama-model.cpp of the tree it ran with in
# tests/data/arch/SOURCE; both equal that commit's files.
#
#   scripts/make_arch_goldens.sh [BUILD_DIR]      (run from the repository root)
#   ONLY="gpt-oss" scripts/make_arch_goldens.sh   (only the fixtures of these families)
set -euo pipefail
BUILD=${1:-build}
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
SHARED=${TOVA_SHARED_DIR:-../shared}
OUT=tests/data/arch
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

g++ -std=c++17 -O2 -o "$TMP/llama_dump" scripts/llama_dump.cpp -I"$LLAMA_DIR/include" \
  -I"$LLAMA_DIR/ggml/include" -L"$LLAMA_DIR/build/bin" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$LLAMA_DIR/build/bin"

# Whether a family's fixtures are to be (re)made this run.
wanted() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

mkdir -p "$OUT"
{
  echo "llama.cpp tree: $LLAMA_DIR = upstream commit ${LLAMA_COMMIT:-34af94cd9ab277632e27caeec2d41de2fd091b31}"
  (cd "$LLAMA_DIR" && sha256sum include/llama.h src/llama-model.cpp)
  echo "dumper: scripts/llama_dump.cpp MODEL tokens-128.json LOGITS 16 64 GREEDY"
  echo "        scripts/llama_dump.cpp --evict 32 {0,4} {qwen3,gemma3,gpt-oss,smollm3,gemma4,gemma4e}-f32.gguf tokens-128.json LOGITS"
} > "$OUT/SOURCE"
for arch in llama3 qwen3 qwen2 mistral phi3 gemma2 gemma3 mixtral qwen2moe qwen3moe gpt-oss smollm3 gemma4 gemma4e gemma4moe qwen35 qwen35moe \
    qwen35-mtp qwen35moe-mtp lfm2 lfm2moe granitehybrid granitehybrid-moe nemotron_h nemotron_h_moe nemotron_h_moe-latent \
    qwen3next qwen3next-ssm_in qwen3next-mtp falcon-h1; do
  wanted "$arch" || continue
  "$BUILD/bin/tova" make-random --arch "$arch" --type f32 -t 1 -o "$OUT/$arch-f32.gguf"
  "$TMP/llama_dump" "$OUT/$arch-f32.gguf" "$SHARED/golden/tokens-128.json" \
    "$OUT/$arch-f32.logits.f32" 16 64 "$OUT/$arch-f32.greedy.json" 2> "$TMP/$arch.log" ||
    { cat "$TMP/$arch.log"; exit 1; }
  echo "$arch: $(cat "$OUT/$arch-f32.greedy.json")"
done
# Quantized weights (Q8_0: llama.cpp rounds activations to Q8_0 blocks too): the fused phi3
# matrices split on block rows, qwen3's q/k norms in the int8 path, the hybrids' DeltaNet
# projections, lfm2's short-convolution projections, granitehybrid's and nemotron_h's Mamba2
# projections (nemotron_h's squared-ReLU feed-forwards too, nemotron_h_moe's sigmoid-routed
# ungated experts, shared expert and latent projections; qwen3next's fused ssm_ba and ssm_in;
# falcon-h1's attention and Mamba2 projections side by side).
for arch in qwen3 phi3 mixtral qwen2moe qwen3moe smollm3 gemma4 gemma4e gemma4moe qwen35 qwen35moe lfm2 lfm2moe granitehybrid granitehybrid-moe nemotron_h nemotron_h_moe nemotron_h_moe-latent \
    qwen3next qwen3next-ssm_in falcon-h1; do
  wanted "$arch" || continue
  "$BUILD/bin/tova" make-random --arch "$arch" --type q8_0 -t 1 -o "$OUT/$arch-q8_0.gguf"
  "$TMP/llama_dump" "$OUT/$arch-q8_0.gguf" "$SHARED/golden/tokens-128.json" \
    "$OUT/$arch-q8_0.logits.f32" 16 64 "$OUT/$arch-q8_0.greedy.json" 2> "$TMP/$arch.log" ||
    { cat "$TMP/$arch.log"; exit 1; }
  echo "$arch q8_0: $(cat "$OUT/$arch-q8_0.greedy.json")"
done
# gpt-oss as it ships: MXFP4 experts, Q8_0 everywhere else (llama-quantize's MXFP4_MOE).
if wanted gpt-oss; then
  "$BUILD/bin/tova" make-random --arch gpt-oss --type mxfp4 -t 1 -o "$OUT/gpt-oss-mxfp4.gguf"
  "$TMP/llama_dump" "$OUT/gpt-oss-mxfp4.gguf" "$SHARED/golden/tokens-128.json" \
    "$OUT/gpt-oss-mxfp4.logits.f32" 16 64 "$OUT/gpt-oss-mxfp4.greedy.json" 2> "$TMP/mx.log" ||
    { cat "$TMP/mx.log"; exit 1; }
  echo "gpt-oss mxfp4: $(cat "$OUT/gpt-oss-mxfp4.greedy.json")"
fi
# Bounded policies computed by llama.cpp's cache: window and sink:4 at k = 32 on the qwen3
# fixture, on gemma3 and gpt-oss, whose window layers (16 positions) also mask inside
# llama.cpp's SWA cache, on smollm3, whose every fourth layer has no RoPE, and on gemma4 and its
# E variant gemma4e, whose shared-K/V layers read the K/V their owner layers keep.
for arch in qwen3 gemma3 gpt-oss smollm3 gemma4 gemma4e; do
  wanted "$arch" || continue
  for n_sink in 0 4; do
    name=$([ "$n_sink" = 0 ] && echo window-32 || echo sink4-32)
    "$TMP/llama_dump" --evict 32 "$n_sink" "$OUT/$arch-f32.gguf" "$SHARED/golden/tokens-128.json" \
      "$OUT/$arch-f32.$name.logits.f32" 2> "$TMP/e.log" || { cat "$TMP/e.log"; exit 1; }
  done
done
