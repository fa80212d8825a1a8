#!/usr/bin/env bash
# Bit-identity check for refactors of the weight-type kernels (issue 45, item 2): for every
# weight type `tova make-random` writes, hashes the fixture file (the scalar quantizers) and the
# logits of 40 tokens under every SIMD target this CPU runs, at batch sizes that take each
# matmul path (1: one-token decode rows, 5: row tiles, 10: int8 token lanes for types without a
# direct decode kernel, 40: token lanes for all). Run it before and after a change and diff:
#
#   scripts/weight_type_bitcheck.sh build/bin/tova /tmp/before.txt
#   (change, rebuild)
#   scripts/weight_type_bitcheck.sh build/bin/tova /tmp/after.txt && diff /tmp/before.txt /tmp/after.txt
#
# TYPES / TARGETS / BATCHES override the lists (space separated); TOVA_ARGS adds flags to each
# `tova logits` (e.g. TOVA_ARGS=--repack: the load-time q4_0_r8 layout). Needs the tiny shape's
# vocabulary under $TOVA_SHARED_DIR/vocab (default ../shared).
set -euo pipefail

tova=${1:?usage: weight_type_bitcheck.sh TOVA_BINARY OUT_FILE}
out=${2:?usage: weight_type_bitcheck.sh TOVA_BINARY OUT_FILE}
export TOVA_SHARED_DIR=${TOVA_SHARED_DIR:-$(cd "$(dirname "$0")/.." && pwd)/../shared}

# The lists come from the binary itself, so a new type or target is checked without editing.
if [[ -z "${TYPES:-}" ]]; then
  TYPES=$("$tova" make-random --help | sed -n 's/.*weight type (\([^)]*\)).*/\1/p' | tr -d ',')
fi
if [[ -z "${TARGETS:-}" ]]; then
  TARGETS=$("$tova" logits --simd list-targets --tokens '[1]' -o /dev/null 2>&1 |
            sed -n 's/.*(supported: \([^)]*\)).*/\1/p' | tr -d ',' | sed 's/ native//' || true)
fi
BATCHES=${BATCHES:-"1 5 10 40"}
[[ -n "$TYPES" && -n "$TARGETS" ]] || { echo "could not read the type or target list" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tokens=$tmp/tokens.json
echo "[1$(for i in $(seq 2 40); do printf ',%d' $((i * 97 % 31000 + 3)); done)]" > "$tokens"

: > "$out"
for type in $TYPES; do
  model=$tmp/$type.gguf
  "$tova" make-random --shape tiny --type "$type" --seed 7 -t 1 -o "$model" > /dev/null 2> "$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  echo "$type fixture $(sha256sum < "$model" | cut -c1-16)" >> "$out"
  for target in $TARGETS; do
    for b in $BATCHES; do
      # shellcheck disable=SC2086  # TOVA_ARGS are words
      "$tova" logits -m "$model" -t 1 --simd "$target" --tokens "$tokens" -b "$b" ${TOVA_ARGS:-} \
        -o "$tmp/logits.bin" > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
      echo "$type $target b$b $(sha256sum < "$tmp/logits.bin" | cut -c1-16)" >> "$out"
    done
  done
  rm -f "$model"
done
echo "$(wc -l < "$out") hashes written to $out ($(echo $TYPES | wc -w) types; targets: $TARGETS)"
