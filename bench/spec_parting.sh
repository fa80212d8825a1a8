#!/bin/bash
# How often greedy output with speculation parts from greedy output without it on a quantized
# target (issue 50: "say how often greedy paths part and why"). For PROMPTS windows of 400 bytes
# of two PG-19 books, per SIMD target and policy: `tova run --temp 0 -n N` without and with a
# draft model (draft-simple, --spec-draft-p-min 0 so every step drafts, n-max 7); prints each
# run that parts (the byte where the two texts first differ) and per target and policy the count
# and the verify steps, drafted and accepted tokens.
#
# Usage: bench/spec_parting.sh TARGET.gguf DRAFT.gguf
#   e.g. a Q4_0 target made with llama.cpp's llama-quantize from ../shared/models/booklm-3m.gguf,
#   drafted by the F32 booklm-3m.gguf itself
# Environment: TOVA [build/bin/tova], N [256], PROMPTS [30], SIMDS [avx3_dl avx2],
#   POLS [full tova:64] (tova:K is --kv-policy tova --kv-budget K), TEXTS [../shared/texts]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
M=${1:?usage: bench/spec_parting.sh TARGET.gguf DRAFT.gguf}
D=${2:?usage: bench/spec_parting.sh TARGET.gguf DRAFT.gguf}
T=${TOVA:-$here/build/bin/tova}
N=${N:-256} PROMPTS=${PROMPTS:-30} texts=${TEXTS:-$here/../shared/texts}
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for simd in ${SIMDS:-avx3_dl avx2}; do
  for pol in ${POLS:-full tova:64}; do
    case $pol in
      tova:*) pa=(--kv-policy tova --kv-budget "${pol#tova:}") ;;
      *) pa=(--kv-policy "$pol") ;;
    esac
    parted=0 steps=0 drafted=0 acc=0
    for i in $(seq 1 "$PROMPTS"); do
      f=$texts/pg19-test-10146.txt
      [ $((i % 2)) -eq 0 ] && f=$texts/pg19-test-10321.txt
      p=$(tail -c +$((20000 + i * 7919)) "$f" | head -c 400)
      a=$("$T" run --simd "$simd" -m "$M" -p "$p" -n "$N" --temp 0 "${pa[@]}" 2>/dev/null)
      b=$("$T" run --simd "$simd" -m "$M" -p "$p" -n "$N" --temp 0 "${pa[@]}" -md "$D" \
            --spec-draft-p-min 0 --spec-draft-n-max 7 2>"$err")
      s=$(grep speculation "$err")
      steps=$((steps + $(sed -n 's/.* \([0-9]*\) verify steps.*/\1/p' <<<"$s")))
      drafted=$((drafted + $(sed -n 's/.* \([0-9]*\) drafted.*/\1/p' <<<"$s")))
      acc=$((acc + $(sed -n 's/.* \([0-9]*\) accepted.*/\1/p' <<<"$s")))
      if [ "$a" != "$b" ]; then
        parted=$((parted + 1))
        k=$(cmp <(printf %s "$a") <(printf %s "$b") 2>/dev/null | sed -n 's/.*byte \([0-9]*\).*/\1/p')
        echo "  $simd $pol prompt $i: parts at byte ${k:-end} of ${#a}"
      fi
    done
    echo "$simd $pol: $parted of $PROMPTS greedy runs of $N tokens part; $steps verify steps, $drafted drafted, $acc accepted"
  done
done
