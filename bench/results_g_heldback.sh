#!/usr/bin/env bash
# docs/RESULTS.md (g), held-back cases: niah_multikey --turns 4 on niah-13m with seeds, keys and
# haystacks that the (g) grid did not use, for snapkv, kvzip, expected-attention and tova (full:
# the ceiling) at k = 128, 256, 512. SAMPLES conversations per case (default 3). POLICIES
# (environment) replaces the list (docs/RESULTS.md (g) adds rkv by POLICIES=full,rkv).
#
# Usage: bench/results_g_heldback.sh build/bin/tova ../shared OUT [SAMPLES]
set -euo pipefail
TOVA=${1:?tova binary}
S=${2:?shared folder}
OUT=${3:?output folder}
N=${4:-3}
THREADS=${THREADS:-1}
POLICIES=${POLICIES:-full,snapkv,kvzip,expected-attention,tova}
mkdir -p "$OUT"
# seed:haystack ("-": RULER's noise sentences). The (g) grid: seed 42, pg19-test-10146 / noise.
for c in 1001:pg19-test-10321.txt 2002:alice.txt 3003:-; do
  seed=${c%%:*}
  hay=${c#*:}
  args=()
  [[ "$hay" != "-" ]] && args=(--haystack "$S/texts/$hay")
  name=heldback-s$seed-${hay%.txt}
  [[ "$hay" == "-" ]] && name=heldback-s$seed-noise
  echo "== $name" >&2
  /usr/bin/time -f "$name: %e s wall, %U s user" "$TOVA" eval niah_multikey \
    -m "$S/models/niah-13m-f16.gguf" --template "$S/models/niah-13m.templates.json" \
    "${args[@]}" --seed "$seed" --lengths 1024 --samples "$N" --max-new 16 --turns 4 -t "$THREADS" \
    --policies "$POLICIES" --budgets 128,256,512 \
    --force --out "$OUT/$name" > "$OUT/$name.md"
done
