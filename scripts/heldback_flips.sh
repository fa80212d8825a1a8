#!/bin/bash
# Where a held-back row's distance to llama.cpp comes from: per position, on one quantized file,
# the relative L2 between
#   tova batch      vs llama.cpp batch      (the row of scripts/check_heldback.sh)
#   tova one-by-one vs llama.cpp one-by-one (tova -b 1; llama_dump --evict with no eviction)
#   llama.cpp one-by-one vs llama.cpp batch (llama.cpp against itself: its two kernel paths)
#   tova one-by-one vs tova batch           (tova against itself)
#   tova --simd scalar / avx2 vs llama.cpp  (tova's scalar reference and its AVX2 target: the same
#                                            arithmetic summed in other orders)
# A rounding flip (two float sums of a different order on either side of an int8 rounding
# boundary, or a near-tied router choosing another expert) shows as ~1e-7 at every position
# before one where it jumps, and appears between an engine's own paths or targets as well; an
# arithmetic error moves every file of its type from the first position it touches, in every
# path and target alike. Used for the misses in docs/ARCHITECTURES.md's held-back tables.
#
#   scripts/heldback_flips.sh FILE.gguf [BUILD_DIR]     (run from the repository root, niced)
# FILE: e.g. a case's F32 file (`tova make-random --arch FAMILY --set ... -s SEED --type f32`,
# the fields of scripts/check_heldback.sh's CASES) quantized by llama-quantize. LLAMA_DIR as in
# scripts/check_heldback.sh. N_SHOW: positions printed (default 32).
set -uo pipefail
FILE=${1:?usage: scripts/heldback_flips.sh FILE.gguf [BUILD_DIR]}
BUILD=${2:-build}
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
SHARED=${TOVA_SHARED_DIR:-../shared}
TOKENS="$SHARED/golden/tokens-128.json"
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
N_SHOW=${N_SHOW:-32}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

g++ -std=c++17 -O2 -o "$W/llama_dump" scripts/llama_dump.cpp -I"$LLAMA_DIR/include" \
  -I"$LLAMA_DIR/ggml/include" -L"$LLAMA_DIR/build/bin" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$LLAMA_DIR/build/bin" || exit 2
nice -n 19 "$W/llama_dump" "$FILE" "$TOKENS" "$W/cpp.b" 16 0 "$W/none.json" 2> "$W/log" &&
  nice -n 19 "$W/llama_dump" --evict 1000000 0 "$FILE" "$TOKENS" "$W/cpp.1" 2> "$W/log" ||
  { echo "llama.cpp: $(tail -1 "$W/log")" >&2; exit 1; }
tova() { nice -n 19 "$BUILD/bin/tova" logits -m "$FILE" -t 1 --tokens "$TOKENS" "$@" 2> "$W/log" ||
  { echo "tova: $(tail -1 "$W/log")" >&2; exit 1; }; }
tova -o "$W/tova.b" -b 512
tova -o "$W/tova.1" -b 1
tova -o "$W/scalar.b" -b 512 --simd scalar
tova -o "$W/avx2.b" -b 512 --simd avx2
n_vocab=$(( $(stat -c %s "$W/cpp.b") / 4 / 128 ))
row() {  # LABEL A B
  printf '%-32s %s\n' "$1" "$("$PYTHON" scripts/compare_logits.py "$n_vocab" --positions "$W/$2" "$W/$3" |
    cut -d' ' -f1-"$N_SHOW")"
}
echo "relative L2 per position (0 to $((N_SHOW - 1))) of $FILE"
row "tova batch vs llama.cpp batch" tova.b cpp.b
row "tova 1-by-1 vs llama.cpp 1-by-1" tova.1 cpp.1
row "llama.cpp 1-by-1 vs batch" cpp.1 cpp.b
row "tova 1-by-1 vs tova batch" tova.1 tova.b
row "tova scalar vs llama.cpp" scalar.b cpp.b
row "tova avx2 vs llama.cpp" avx2.b cpp.b
row "tova scalar vs tova" scalar.b tova.b
