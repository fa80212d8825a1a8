#!/bin/bash
# Writes the vision fixtures and their goldens (tests/data/vision): the test images
# (scripts/make_test_images.cpp), random-weight gemma4v mmproj files (`tova make-random
# --projector gemma4v`, f32 and q8_0, projecting to the width of tests/data/arch/gemma4-f32.gguf)
# and, for every image and mmproj, llama.cpp's image embeddings (scripts/llama_mtmd_dump.cpp over
# libmtmd): NAME.IMAGE.embd.f32, float32 [n_tokens][64]; tests/data/vision/goldens.txt lists
# "MMPROJ IMAGE N_TOKENS N_EMBD" per pair. For the f32 mmproj and two images, the text side too:
# $PROMPT (one image marker) through tests/data/arch/gemma4-f32.gguf as mtmd feeds it:
# NAME.IMAGE.layout.txt (the chunks: text token ids, the image's token count) and
# NAME.IMAGE.logits.f32 (float32 [tokens of the last text chunk][n_vocab]).
#
# llama.cpp is built OUTSIDE the repository (never committed): LLAMA_DIR (default
# /work/ext/llama.cpp, build in $LLAMA_DIR/build, CPU, Release, with tools/mtmd's libmtmd),
# upstream commit 34af94cd9ab277632e27caeec2d41de2fd091b31; SOURCE records the sha256 of the
# mtmd files the goldens depend on.
#
#   scripts/make_vision_goldens.sh [BUILD_DIR]      (run from the repository root)
set -euo pipefail
BUILD=${1:-build}
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
OUT=tests/data/vision
TEXT=tests/data/arch/gemma4-f32.gguf
PROMPT="Once upon a time <__media__> there was a little girl named Lily. She loved to play outside."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

g++ -std=c++17 -O2 -o "$TMP/make_test_images" scripts/make_test_images.cpp \
  $(pkg-config --cflags --libs stb)
"$TMP/make_test_images" "$OUT"

g++ -std=c++17 -O2 -o "$TMP/llama_mtmd_dump" scripts/llama_mtmd_dump.cpp -I"$LLAMA_DIR/include" \
  -I"$LLAMA_DIR/ggml/include" -I"$LLAMA_DIR/tools/mtmd" -L"$LLAMA_DIR/build/bin" -lmtmd -lllama \
  -lggml -lggml-base -Wl,-rpath,"$LLAMA_DIR/build/bin"

{
  echo "llama.cpp tree: $LLAMA_DIR = upstream commit ${LLAMA_COMMIT:-34af94cd9ab277632e27caeec2d41de2fd091b31}"
  (cd "$LLAMA_DIR" && sha256sum tools/mtmd/clip.cpp tools/mtmd/models/gemma4v.cpp \
    tools/mtmd/mtmd.cpp tools/mtmd/mtmd-image.cpp tools/mtmd/mtmd-helper.cpp)
  echo "dumper: scripts/llama_mtmd_dump.cpp $TEXT MMPROJ IMAGE EMBD"
  echo "        scripts/llama_mtmd_dump.cpp $TEXT gemma4v-f32.gguf IMAGE EMBD \"$PROMPT\" LAYOUT LOGITS"
} > "$OUT/SOURCE"
: > "$OUT/goldens.txt"
for type in f32 q8_0; do
  mm="$OUT/gemma4v-$type.gguf"
  "$BUILD/bin/tova" make-random --projector gemma4v --type "$type" -o "$mm"
  for img in "$OUT"/*.png "$OUT"/*.jpg; do
    base=$(basename "$img")
    embd="$OUT/gemma4v-$type.$base.embd.f32"
    dims=$("$TMP/llama_mtmd_dump" "$TEXT" "$mm" "$img" "$embd" 2> "$TMP/log") ||
      { cat "$TMP/log"; exit 1; }
    echo "gemma4v-$type.gguf $base $dims" >> "$OUT/goldens.txt"
    echo "gemma4v-$type $base: $dims"
  done
done
for img in disc-64x48.png bars-50x30.jpg; do
  f="$OUT/gemma4v-f32.$img"
  "$TMP/llama_mtmd_dump" "$TEXT" "$OUT/gemma4v-f32.gguf" "$OUT/$img" "$TMP/embd.f32" "$PROMPT" \
    "$f.layout.txt" "$f.logits.f32" > /dev/null 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  echo "gemma4v-f32 $img text side: $(wc -l < "$f.layout.txt") chunks"
done
