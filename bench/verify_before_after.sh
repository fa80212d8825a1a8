#!/bin/bash
# The verify step before and after a kernel change (issue 50): two tova binaries alternating
# (order swapped every round), `tova bench -p STEPS -n 0 -d DEPTH` (one forward step of n tokens
# after DEPTH cached ones) on each SIMD target; prints per target and binary the median ms per
# step and cost(n) = t(n) / t(1), and the median over rounds of the same-round ratio
# after / before. Run it with nothing else on the machine.
#
# Usage: bench/verify_before_after.sh TOVA_BEFORE TOVA_AFTER MODEL.gguf...
# Environment: ROUNDS [3], THREADS [2], DEPTH [128], STEPS [1,2,3,4,8], REPS [3],
#   SIMDS [native avx2], BEFORE_ARGS / AFTER_ARGS [none]: flags added to each binary's command
#   (one binary, two settings: BEFORE_ARGS=--no-repack AFTER_ARGS=--repack with the same tova
#   twice)
set -euo pipefail
before=${1:?usage: bench/verify_before_after.sh TOVA_BEFORE TOVA_AFTER MODEL...}
after=${2:?}
shift 2
rounds=${ROUNDS:-3} threads=${THREADS:-2} depth=${DEPTH:-128} steps=${STEPS:-1,2,3,4,8}
reps=${REPS:-3} simds=${SIMDS:-native avx2}
out=$(mktemp /tmp/verify_before_after.XXXXXX.jsonl)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1); $threads threads; depth $depth" >&2
for r in $(seq "$rounds"); do
  for simd in $simds; do
    for m in "$@"; do
      order="before after"
      [ $((r % 2)) -eq 0 ] && order="after before"
      for w in $order; do
        bin=$before args=${BEFORE_ARGS:-}
        [ "$w" = after ] && bin=$after args=${AFTER_ARGS:-}
        # shellcheck disable=SC2086  # the flags are words
        "$bin" bench --simd "$simd" -m "$m" -p "$steps" -n 0 -d "$depth" -r "$reps" -t "$threads" \
            $args -o json | python3 -c '
import json, sys
w, simd, m, r = sys.argv[1:]
for x in json.load(sys.stdin):
    print(json.dumps({"bin": w, "simd": simd, "model": m, "round": int(r), "n": x["n_prompt"],
                      "ms": 1000 * x["n_prompt"] / x["avg_ts"]}))' "$w" "$simd" "$(basename "$m" .gguf)" "$r" >>"$out"
      done
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for model in sorted({r["model"] for r in rows}):
    for simd in sorted({r["simd"] for r in rows}):
        sel = [r for r in rows if r["model"] == model and r["simd"] == simd]
        ns = sorted({r["n"] for r in sel})
        print(f"\n{model}, --simd {simd}\n")
        print("| | " + " | ".join(f"n = {n}" for n in ns) + " |")
        print("|---|" + "---:|" * len(ns))
        med = lambda w, n: st.median(r["ms"] for r in sel if r["bin"] == w and r["n"] == n)
        for w in ("before", "after"):
            print(f"| {w}, ms (cost) | " + " | ".join(
                f"{med(w, n):.1f} ({med(w, n) / med(w, ns[0]):.2f})" for n in ns) + " |")
        def ratio(n):
            q = []
            for rnd in sorted({r["round"] for r in sel}):
                a = [r["ms"] for r in sel if r["bin"] == "after" and r["n"] == n and r["round"] == rnd]
                b = [r["ms"] for r in sel if r["bin"] == "before" and r["n"] == n and r["round"] == rnd]
                if a and b: q.append(a[0] / b[0])
            return st.median(q)
        print("| after / before | " + " | ".join(f"{ratio(n):.2f}" for n in ns) + " |")
PY
echo "results: $out" >&2
