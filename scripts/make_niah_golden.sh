#!/bin/bash
# Golden data from llama.cpp for the retrieval model ../shared/models/niah-13m-f16.gguf
# (tests/data/niah/): its logits on ../shared/golden/tokens-128.json with the 64-token greedy
# continuation of the first 16 tokens, and a 2,048-context needle task: a haystack from a PG-19
# test book with one needle at a third of its depth and the model's question
# (niah-13m.templates.json), the logits of its last 8 positions and the greedy answer.
#
# llama.cpp is built OUTSIDE the repository (never committed): LLAMA_DIR (default /work/llama,
# CPU, Release, shared libraries in $LLAMA_BUILD, default $LLAMA_DIR/build-native/bin, with
# llama-tokenize). Goldens committed with this script were made on 2026-11-26 with llama.cpp
# upstream commit 34af94cd9ab277632e27caeec2d41de2fd091b31 (../shared/ANCHORS.md).
#
#   scripts/make_niah_golden.sh      (run from the repository root)
set -euo pipefail
LLAMA_DIR=${LLAMA_DIR:-/work/llama}
LLAMA_BUILD=${LLAMA_BUILD:-$LLAMA_DIR/build-native/bin}
SHARED=${TOVA_SHARED_DIR:-../shared}
MODEL=$SHARED/models/niah-13m-f16.gguf
OUT=tests/data/niah
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

g++ -std=c++17 -O2 -o "$TMP/llama_dump" scripts/llama_dump.cpp -I"$LLAMA_DIR/include" \
  -I"$LLAMA_DIR/ggml/include" -L"$LLAMA_BUILD" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$LLAMA_BUILD"

mkdir -p "$OUT"
# The needle prompt: 3,200 characters of the book's text (whitespace runs folded to one space)
# with the needle after the sentence that ends nearest a third of the way in, then the question
# and the answer prefix, one space apart, as the model was trained.
python3 - "$SHARED/texts/pg19-test-10321.txt" > "$OUT/needle-prompt.txt" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
start = text.find("\n", text.find("*** START OF THIS PROJECT GUTENBERG")) + 1
body = re.sub(r"\s+", " ", text[start:]).strip()[2000:5200]
body = body[body.find(". ") + 2:body.rfind(". ") + 1]
cut = body.find(". ", len(body) // 3) + 1
needle = "The special magic number for lantern is 4719263."
question = "What is the special magic number for lantern? The special magic number for lantern is"
sys.stdout.write(" ".join([body[:cut], needle, body[cut + 1:], question]))
PY
"$LLAMA_BUILD/llama-tokenize" -m "$MODEL" -f "$OUT/needle-prompt.txt" --ids --log-disable \
  2> /dev/null | tr -d '[]' | tr -d ' ' | sed 's/^/[/; s/$/]/' > "$OUT/needle-prompt.tokens.json"

{
  echo "llama.cpp tree: $LLAMA_DIR = upstream commit ${LLAMA_COMMIT:-34af94cd9ab277632e27caeec2d41de2fd091b31}"
  (cd "$LLAMA_DIR" && sha256sum include/llama.h src/llama-model.cpp)
  echo "model: $(sha256sum "$MODEL" | cut -d' ' -f1)  niah-13m-f16.gguf"
  echo "dumper: scripts/llama_dump.cpp MODEL tokens-128.json LOGITS 16 64 GREEDY"
  echo "        scripts/llama_dump.cpp MODEL needle-prompt.tokens.json LOGITS N 8 GREEDY 8"
} > "$OUT/SOURCE"
"$TMP/llama_dump" "$MODEL" "$SHARED/golden/tokens-128.json" "$OUT/tokens-128.logits.f32" 16 64 \
  "$OUT/tokens-128.greedy.json" 2> "$TMP/a.log" || { cat "$TMP/a.log"; exit 1; }
n=$(tr ',' '\n' < "$OUT/needle-prompt.tokens.json" | wc -l)
"$TMP/llama_dump" "$MODEL" "$OUT/needle-prompt.tokens.json" "$OUT/needle-prompt.last8.logits.f32" \
  "$n" 8 "$OUT/needle-prompt.greedy.json" 8 2> "$TMP/b.log" || { cat "$TMP/b.log"; exit 1; }
echo "tokens-128 greedy: $(cat "$OUT/tokens-128.greedy.json")"
echo "needle prompt: $n tokens; greedy answer: $(cat "$OUT/needle-prompt.greedy.json")"
