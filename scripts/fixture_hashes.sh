#!/bin/bash
# The sha256 of every file `tova make-random` can write, one line each, so that a change to the
# fixture writer can be shown to leave every file byte-identical (the committed llama.cpp goldens
# of tests/data/arch and tests/data/quant were made from these files).
#
#   scripts/fixture_hashes.sh [BUILD_DIR] > after.txt
#   scripts/fixture_hashes.sh --check BEFORE.txt [BUILD_DIR]   (exit 1 on any difference)
#
# The lines are compared as a set (sorted): the order of the shapes in the program's list may
# change without any file changing. tests/data/fixture_hashes.txt holds the list of main at
# c20ec58 (2026-12-07), which the fixture writer's move to src/model/fixture/ left identical;
# a change that means to change a fixture regenerates it with the first form. A new family adds
# lines: nemotron_h and nemotron_h_moe (2026-12-07) added 160 (their fixtures, plans and
# held-back cases in every type), the 1435 before byte-identical (diff of the sorted lists);
# qwen3next (2026-12-07) added 128, the 1595 before byte-identical.
# falcon-h1 (2026-12-08) added 64, the ones before byte-identical.
#
# What it covers (the names come from the program's own error messages, so a new family, shape
# or weight type is covered without editing this script):
#  - every --arch fixture in every weight type;
#  - every small --shape (the test shapes) in every weight type;
#  - every --shape's tensor plan (--plan: names, types, dims) in every weight type;
#  - the real shapes of up to ~1.2 B parameters written whole at q4_0, the larger ones written at
#    q4_0 with one or two layers (--set n_layer=...), since whole files are tens of gigabytes;
#  - every held-back case of scripts/check_heldback.sh (--arch FAMILY --set ... -s SEED) in
#    every weight type.
# An error is recorded as the hash of its message, so a shape that is refused stays refused.
set -uo pipefail

CHECK=""
if [ "${1:-}" = "--check" ]; then
  CHECK=$2
  shift 2
fi
BUILD=${1:-build}
TOVA="$BUILD/bin/tova"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The valid names the program lists after "(valid: " in an error about an unknown one.
choices() {
  "$TOVA" make-random "$@" -o "$TMP/x.gguf" 2>&1 | sed -n 's/.*(valid: \(.*\))$/\1/p' | tr -d ','
}
ARCHS=$(choices --arch no-such-family)
SHAPES=$(choices --shape no-such-shape)
TYPES=$(choices --shape tiny --type no-such-type)
[ -n "$ARCHS" ] && [ -n "$SHAPES" ] && [ -n "$TYPES" ] ||
  { echo "cannot read the choices from $TOVA" >&2; exit 2; }

# one LABEL ARGS...: writes a file (or a plan with --plan) and prints its hash and the label.
one() {
  local label=$1
  shift
  local f="$TMP/f.gguf" h
  if "$TOVA" make-random "$@" -t 2 -o "$f" > "$TMP/out" 2> "$TMP/err"; then
    if [ -f "$f" ]; then
      h=$(sha256sum < "$f" | cut -c1-64)
    else
      h=plan:$(sha256sum < "$TMP/out" | cut -c1-64)
    fi
  else
    h=error:$(tail -1 "$TMP/err" | sha256sum | cut -c1-64)
  fi
  rm -f "$f"
  echo "$h  $label"
}

run_all() {
  local a t s
  for a in $ARCHS; do
    for t in $TYPES; do one "arch=$a type=$t" --arch "$a" --type "$t"; done
  done
  for s in $SHAPES; do
    for t in $TYPES; do one "plan shape=$s type=$t" --shape "$s" --type "$t" --plan; done
  done
  for s in tiny tiny-qwen2 tiny-quant tiny-quant-moe; do
    for t in $TYPES; do one "shape=$s type=$t" --shape "$s" --type "$t"; done
  done
  for s in tinyllama smollm llama3.2-1b qwen3-0.6b lfm2-1.2b; do
    one "shape=$s type=q4_0" --shape "$s" --type q4_0
  done
  one "shape=qwen3-30b-a3b n_layer=1 type=q4_0" --shape qwen3-30b-a3b --set n_layer=1 --type q4_0
  one "shape=gpt-oss-20b n_layer=1 type=mxfp4" --shape gpt-oss-20b --set n_layer=1 --type mxfp4
  one "shape=qwen3.5-4b n_layer=4 type=q4_0" --shape qwen3.5-4b --set n_layer=4 --type q4_0
  one "shape=lfm2-8b-a1b n_layer=3 type=q4_0" --shape lfm2-8b-a1b --set n_layer=3 --type q4_0
  one "shape=granite-4.0-h-tiny n_layer=6 type=q4_0" --shape granite-4.0-h-tiny --set n_layer=6 \
    --type q4_0
  one "shape=gemma-4-e4b n_layer=6 n_shared_kv=1 type=q4_0" --shape gemma-4-e4b --set n_layer=6 \
    --set gemma4.n_shared_kv=1 --type q4_0
  # The held-back cases: "name|family|seed|fields" lines of check_heldback.sh's CASES.
  local line name family seed fields sets
  while IFS='|' read -r name family seed fields; do
    sets=()
    set -f  # no pathname expansion: nemotron_h's layer_blocks holds '*'
    for s in $fields; do sets+=(--set "$s"); done
    set +f
    for t in $TYPES; do
      one "heldback=$name type=$t" --arch "$family" "${sets[@]}" -s "$seed" --type "$t"
    done
  done < <(sed -n '/^CASES=(/,/^)/p' scripts/check_heldback.sh | sed -n 's/^ *"\(.*\)"$/\1/p')
}

if [ -z "$CHECK" ]; then
  run_all
  exit 0
fi
run_all | sort > "$TMP/now.txt"
if diff <(sort "$CHECK") "$TMP/now.txt" > "$TMP/diff"; then
  echo "all $(wc -l < "$TMP/now.txt") fixtures identical to $CHECK"
else
  cat "$TMP/diff"
  echo "$(grep -c '^>' "$TMP/diff") of $(wc -l < "$TMP/now.txt") lines differ from $CHECK" >&2
  exit 1
fi
