#!/bin/bash
# Writes tests/data/tokenizer/gemma4-vocab.gguf (a vocabulary of tokenizer.ggml.model "gemma4",
# scripts/make_gemma4_vocab.cpp: stories260K's SentencePiece vocabulary as BPE, plus newline
# runs and USER_DEFINED markers) and llama.cpp's tokenization of test strings with it:
# gemma4-vocab.gguf.inp (llama.cpp's 46 tokenizer test strings of ggml-vocab-llama-spm, then
# Gemma-specific ones), .out (add_special = false, parse_special = false) and .out.special
# (both true). llama.cpp is built OUTSIDE the repository (LLAMA_DIR, default /work/ext/llama.cpp,
# upstream 34af94cd); goldens committed with this script were made on 2026-11-29.
#   scripts/make_gemma4_tokenizer_goldens.sh      (run from the repository root)
set -euo pipefail
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
SHARED=${TOVA_SHARED_DIR:-../shared}
OUT=tests/data/tokenizer
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
LIBS=(-L"$LLAMA_DIR/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA_DIR/build/bin")
INC=(-I"$LLAMA_DIR/include" -I"$LLAMA_DIR/ggml/include")
g++ -std=c++17 -O2 -o "$TMP/make_gemma4_vocab" scripts/make_gemma4_vocab.cpp "${INC[@]}" "${LIBS[@]}"
g++ -std=c++17 -O2 -o "$TMP/llama_dump" scripts/llama_dump.cpp "${INC[@]}" "${LIBS[@]}"
mkdir -p "$OUT"
"$TMP/make_gemma4_vocab" assets/stories260K.gguf "$OUT/gemma4-vocab.gguf"
{
  cat "$SHARED/vocab/ggml-vocab-llama-spm.gguf.inp"
  for s in $'\n' $'\n\n' $'\n\n\n\n\n' $'a\n\nb' $'  two\n\n\n  lines  ' $'<|channel>thought\n<channel|>Hi' \
           'Once upon a time,  there was   a little girl.' $'tab\tand \xc3\xa9t\xc3\xa9 \xe2\x9c\x85' \
           $' \n' $'\n \n' 'the<|channel>the' '<s>text</s>'; do
    printf '%s\n__ggml_vocab_test__\n' "$s"
  done
} > "$OUT/gemma4-vocab.gguf.inp"
"$TMP/llama_dump" --tokenize "$OUT/gemma4-vocab.gguf" "$OUT/gemma4-vocab.gguf.inp" \
  "$OUT/gemma4-vocab.gguf.out"
echo "$(grep -c '' "$OUT/gemma4-vocab.gguf.out") strings tokenized"
