#!/bin/bash
# Writes the draft-mtp goldens of the *-mtp fixtures (tests/data/arch/{qwen35,qwen35moe,qwen3next}-mtp-f32,
# made by scripts/make_arch_goldens.sh): the logits of llama.cpp's multi-token prediction block
# drafting after the first 12 tokens of ../shared/golden/tokens-128.json, 4 drafts a round, for
# 3 rounds 5 tokens apart (scripts/llama_mtp_dump.cpp says how it drives llama.cpp's contexts).
# llama.cpp is built OUTSIDE the repository: LLAMA_DIR (default /work/ext/llama.cpp, build in
# $LLAMA_DIR/build, CPU, Release), upstream commit 34af94cd9ab277632e27caeec2d41de2fd091b31
# (tests/data/arch/SOURCE records the sha256 of the files the goldens depend on).
#
#   scripts/make_mtp_goldens.sh      (run from the repository root)
set -euo pipefail
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
SHARED=${TOVA_SHARED_DIR:-../shared}
OUT=tests/data/arch
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

g++ -std=c++17 -O2 -o "$TMP/llama_mtp_dump" scripts/llama_mtp_dump.cpp -I"$LLAMA_DIR/include" \
  -I"$LLAMA_DIR/src" -I"$LLAMA_DIR/ggml/include" -L"$LLAMA_DIR/build/bin" -lllama -lggml \
  -lggml-base -Wl,-rpath,"$LLAMA_DIR/build/bin"

{
  echo "llama.cpp tree: $LLAMA_DIR = upstream commit ${LLAMA_COMMIT:-34af94cd9ab277632e27caeec2d41de2fd091b31}"
  (cd "$LLAMA_DIR" && sha256sum include/llama.h src/llama-ext.h src/models/qwen35.cpp \
    src/models/qwen35moe.cpp src/models/qwen3next.cpp common/speculative.cpp)
  echo "dumper: scripts/llama_mtp_dump.cpp MODEL tokens-128.json LOGITS DRAFTS 12 4 5 3"
} > "$OUT/SOURCE.mtp"
for arch in qwen35 qwen35moe qwen3next; do
  f="$OUT/$arch-mtp-f32"
  "$TMP/llama_mtp_dump" "$f.gguf" "$SHARED/golden/tokens-128.json" "$f.draft.logits.f32" \
    "$f.draft.json" 12 4 5 3 2> "$TMP/$arch.log" || { cat "$TMP/$arch.log"; exit 1; }
  echo "$arch-mtp drafts: $(cat "$f.draft.json")"
done
