#!/usr/bin/env bash
# docs/RESULTS.md (g): single-turn and --turns 4 grids on niah-13m (niah_single, niah_multikey,
# vt) and answer-NLL grids on booklm-3m, every policy of this branch at k = 128, 256, 512.
# Small on purpose (a shared 2-core machine): SAMPLES per cell (default 2), 1,024-token samples.
#
# Usage: bench/results_g.sh build/bin/tova ../shared OUT [SAMPLES] [FIRST]
# FIRST: skip the runs before the one of that name (resuming). THREADS (environment, default 1):
# tova's -t; records are the same bits for any thread count (tests/eval/task_eval_test.cpp).
set -euo pipefail
TOVA=${1:?tova binary}
S=${2:?shared folder}
OUT=${3:?output folder}
N=${4:-2}
FIRST=${5:-}
# Every policy issue 36 names beside those of (e): the query-agnostic and future-query rules
# (kvzip, expected-attention, rkv) and CaM's merging on two scoring rules.
P=full,window,sink:4,h2o,tova,snapkv,keydiff,kvzip,expected-attention,rkv,tova+merge,h2o+merge
THREADS=${THREADS:-1}
K=128,256,512
NIAH=(-m "$S/models/niah-13m-f16.gguf" --template "$S/models/niah-13m.templates.json")
mkdir -p "$OUT"
run() {
  local name=$1
  shift
  if [[ -n "$FIRST" && "$name" != "$FIRST" ]]; then
    echo "== $name: skipped" >&2
    return
  fi
  FIRST=
  echo "== $name: $*" >&2
  /usr/bin/time -f "$name: %e s wall, %U s user" "$TOVA" eval "$@" -t "$THREADS" --policies "$P" --budgets "$K" \
    --force --out "$OUT/$name" > "$OUT/$name.md"
}
# In order of what the reading needs most (a shared machine may not finish them all):
# SAMPLES conversations for the niah-13m grids; BOOK_SAMPLES (default 2 x SAMPLES) on booklm-3m;
# VT_SAMPLES (default SAMPLES) for vt, VT4_SAMPLES (default (SAMPLES + 1) / 2) for vt's 4 turns.
BOOK=${BOOK_SAMPLES:-$((N * 2))}
VT=${VT_SAMPLES:-$N}
VT4=${VT4_SAMPLES:-$(((N + 1) / 2))}
# Single-turn: RULER's form (niah answers are " VALUE.": 16 tokens are plenty; vt RULER's 30).
run niah13m-single niah_single,niah_multikey "${NIAH[@]}" --lengths 1024 --samples "$N" --max-new 16
# Four questions of one context, one per turn of one conversation.
run niah13m-turns4 niah_multikey "${NIAH[@]}" --lengths 1024 --samples "$N" --max-new 16 --turns 4
# Answer NLL on the book model (trained at 1,024 on books; it was never taught the task: its
# string match is ~0 everywhere, the answer's likelihood is what moves), a PG-19 haystack.
run booklm-nll niah_single,niah_multikey -m "$S/models/booklm-3m.gguf" \
  --template "$S/models/niah-13m.templates.json" --haystack "$S/texts/pg19-test-10146.txt" \
  --lengths 1024 --samples "$BOOK" --max-new 8
run booklm-nll-turns4 niah_multikey -m "$S/models/booklm-3m.gguf" \
  --template "$S/models/niah-13m.templates.json" --haystack "$S/texts/pg19-test-10146.txt" \
  --lengths 1024 --samples "$BOOK" --max-new 8 --turns 4
run niah13m-vt vt -m "$S/models/niah-13m-f16.gguf" --lengths 1024 --samples "$VT"
# vt with 4 chains does not fit 1,024 tokens (its smallest prompt: 1,431 + 4 x 30 answers):
# 2,048 tokens.
run niah13m-vt-turns4 vt -m "$S/models/niah-13m-f16.gguf" --lengths 2048 --samples "$VT4" --turns 4
