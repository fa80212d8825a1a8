#!/bin/bash
# The verify-cost curve of speculative decoding (issue 50): the time of ONE forward step of n
# tokens (n = 1, 2, 4, 8, 16) appended to a cache already holding DEPTH tokens, tova beside
# llama.cpp's llama-bench (`-p n -d DEPTH`: one ubatch of n tokens at that depth), alternating
# engine order round by round. Prints ms per step, the step's cost relative to a 1-token step
# (cost(n) = t(n) / t(1)), and the speedup an acceptance rate a buys with draft length n on that
# shape: tokens per step E(a, n) = (1 - a^(n+1)) / (1 - a) over cost(n).
# For MoE files it also prints the distinct experts a step of n tokens reads under uniform
# routing, E * (1 - (1 - k/E)^n), which is what makes a long draft expensive there.
# Run it with no build beside it.
#
# Usage: bench/verify_cost.sh TOVA LLAMA_BIN_DIR MODEL.gguf...
# Environment: ROUNDS [3], THREADS [2], DEPTH [512], STEPS [1,2,4,8,16], REPS [3],
#   SIMD tova's --simd [native], LLAMA_ARGS [-mmp 0], EXPERTS "E,k" for the MoE line [none]
set -euo pipefail
tova=${1:?usage: bench/verify_cost.sh TOVA LLAMA_BIN_DIR MODEL...}
L=${2:?}
shift 2
rounds=${ROUNDS:-3} threads=${THREADS:-2} depth=${DEPTH:-512} steps=${STEPS:-1,2,4,8,16}
reps=${REPS:-3} simd=${SIMD:-native} llama_args=${LLAMA_ARGS:--mmp 0}
out=$(mktemp -d /tmp/verify_cost.XXXXXX)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | awk 'NR == 1'); tova --simd $simd;" \
     "$threads threads; depth $depth" >&2

run() {  # engine file round
  local json
  case $1 in
    llama.cpp) json=$("$L/llama-bench" -m "$2" -p "$steps" -n 0 -d "$depth" -r "$reps" \
                        -t "$threads" -ctk f16 -ctv f16 $llama_args -o json 2>/dev/null) ;;
    tova) json=$("$tova" bench --simd "$simd" -m "$2" -p "$steps" -n 0 -d "$depth" -r "$reps" \
                   -t "$threads" --kv-type f16 -o json) ;;
  esac
  python3 -c '
import json, sys
engine, model, rnd = sys.argv[1:]
for r in json.loads(sys.stdin.read()):
    if r["n_prompt"] > 0:
        print(json.dumps({"engine": engine, "model": model, "round": int(rnd),
                          "n": r["n_prompt"], "ts": r["avg_ts"]}))' \
    "$1" "$(basename "$2" .gguf)" "$3" <<<"$json" >>"$out/results.jsonl"
}

engines=(tova llama.cpp)
for r in $(seq "$rounds"); do
  for f in "$@"; do
    for i in 0 1; do
      e=${engines[$(((i + r - 1) % 2))]}
      echo "round $r/$rounds: $(basename "$f") $e" >&2
      run "$e" "$f" "$r"
    done
  done
done

python3 - "$out/results.jsonl" "${EXPERTS:-}" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
experts = sys.argv[2]
ms = {}
for r in rows:
    ms.setdefault((r["model"], r["engine"], r["n"]), []).append(1000.0 * r["n"] / r["ts"])
models = sorted({r["model"] for r in rows})
ns = sorted({r["n"] for r in rows})
for m in models:
    print(f"\n### {m}\n")
    print("| n | tova ms/step | llama.cpp ms/step | tova cost(n) | llama.cpp cost(n) | tova / llama.cpp time |"
          + (" distinct experts |" if experts else ""))
    print("|---|---|---|---|---|---|" + ("---|" if experts else ""))
    med = {(e, n): statistics.median(ms[(m, e, n)]) for e in ("tova", "llama.cpp") for n in ns
           if (m, e, n) in ms}
    for n in ns:
        t, l = med.get(("tova", n)), med.get(("llama.cpp", n))
        t1, l1 = med.get(("tova", ns[0])), med.get(("llama.cpp", ns[0]))
        line = (f"| {n} | {t:.2f} | {l:.2f} | {t / t1:.2f} | {l / l1:.2f} | {t / l:.2f} |"
                if None not in (t, l, t1, l1) else f"| {n} | missing |")
        if experts:
            E, k = (int(x) for x in experts.split(","))
            line += f" {E * (1 - (1 - k / E) ** n):.1f} of {E} |"
        print(line)
    print("\nspeedup over plain decode (tova) for acceptance rate a and draft length n-1 "
          "(n tokens verified per step):\n")
    print("| a | " + " | ".join(f"n={n}" for n in ns[1:]) + " |")
    print("|---|" + "---|" * (len(ns) - 1))
    for a in (0.3, 0.5, 0.7, 0.9):
        cells = []
        for n in ns[1:]:
            if ("tova", n) not in med:
                cells.append("-")
                continue
            cost = med[("tova", n)] / med[("tova", ns[0])]
            tokens = (1 - a ** n) / (1 - a)  # expected tokens per step: accepted drafts + 1
            cells.append(f"{tokens / cost:.2f}")
        print(f"| {a} | " + " | ".join(cells) + " |")
EOF
echo "raw: $out/results.jsonl" >&2
