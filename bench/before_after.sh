#!/bin/bash
# Speed before and after a change, beside llama.cpp: two tova binaries and llama.cpp's
# llama-bench on the same GGUF files, one after another within each round (the order rotating
# from round to round), prompt (ppP) and decode (tgG) at depth 0, f16 K/V. Prints each round's
# tok/s and the medians of the same-round ratios after / before and after / llama.cpp (this
# machine's bandwidth wanders between minutes: compare within a round only). Run it with no
# build beside it.
#
# Usage: bench/before_after.sh TOVA_BEFORE TOVA_AFTER LLAMA_BIN_DIR MODEL.gguf...
# Environment (defaults in brackets): ROUNDS [3], THREADS [2], PROMPT [512], GEN [64],
#   REPS repetitions per run [1], SIMD tova's --simd [native], LLAMA_ARGS [-mmp 0]
set -euo pipefail
before=${1:?usage: bench/before_after.sh TOVA_BEFORE TOVA_AFTER LLAMA_BIN_DIR MODEL...}
after=${2:?}
L=${3:?}
shift 3
rounds=${ROUNDS:-3} threads=${THREADS:-2} prompt=${PROMPT:-512} gen=${GEN:-64} reps=${REPS:-1}
simd=${SIMD:-native} llama_args=${LLAMA_ARGS:--mmp 0}
out=$(mktemp -d /tmp/before_after.XXXXXX)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1); tova --simd $simd; $threads threads" >&2

# One engine's run of one file: a JSON line per test {engine, model, round, test, ts}.
run() {  # engine file round
  local json
  case $1 in
    llama.cpp) json=$("$L/llama-bench" -m "$2" -p "$prompt" -n "$gen" -r "$reps" -t "$threads" \
                        -ctk f16 -ctv f16 $llama_args -o json 2>/dev/null) ;;
    before) json=$("$before" bench --simd "$simd" -m "$2" -p "$prompt" -n "$gen" -r "$reps" \
                     -t "$threads" --kv-type f16 -o json) ;;
    after) json=$("$after" bench --simd "$simd" -m "$2" -p "$prompt" -n "$gen" -r "$reps" \
                    -t "$threads" --kv-type f16 -o json) ;;
  esac
  python3 -c '
import json, sys
engine, model, rnd = sys.argv[1:]
for r in json.loads(sys.stdin.read()):
    test = ("pp%d" % r["n_prompt"]) if r["n_prompt"] > 0 else ("tg%d" % r["n_gen"])
    print(json.dumps({"engine": engine, "model": model, "round": int(rnd), "test": test,
                      "ts": r["avg_ts"]}))' "$1" "$(basename "$2" .gguf)" "$3" <<<"$json" \
    >>"$out/results.jsonl"
}

engines=(before after llama.cpp)
for r in $(seq "$rounds"); do
  for f in "$@"; do
    # Rotate the order: round 1 before, after, llama.cpp; round 2 after, llama.cpp, before; ...
    for i in 0 1 2; do
      e=${engines[$(((i + r - 1) % 3))]}
      echo "round $r/$rounds: $(basename "$f") $e" >&2
      run "$e" "$f" "$r"
    done
  done
done

python3 - "$out/results.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cell = {(r["model"], r["test"], r["round"], r["engine"]): r["ts"] for r in rows}
models = sorted({(r["model"], r["test"]) for r in rows})
print("| model | test | round | before | after | llama.cpp | after / before | after / llama.cpp |")
print("|---|---|---|---|---|---|---|---|")
for m, t in models:
    ab, al = [], []
    for rnd in sorted({r["round"] for r in rows}):
        b, a, l = (cell.get((m, t, rnd, e)) for e in ("before", "after", "llama.cpp"))
        if None in (b, a, l):
            continue
        ab.append(a / b)
        al.append(a / l)
        print(f"| {m} | {t} | {rnd} | {b:.2f} | {a:.2f} | {l:.2f} | {a / b:.3f} | {a / l:.2f} |")
    if ab:
        print(f"| {m} | {t} | median | | | | **{statistics.median(ab):.3f}** | "
              f"**{statistics.median(al):.2f}** |")
EOF
echo "raw: $out/results.jsonl" >&2
