#!/bin/bash
# Issue 48's cells: tova, llama.cpp and ik_llama.cpp (its default and `-rtr 1`, the rows
# repacked at load) on the same GGUF files, prompt (ppP) and decode (tgG), alternating within
# each round with the order rotated every round, then per cell the median over rounds of the
# same-round ratios tova / ik_llama.cpp (the better of its two runs in that round) and
# tova / llama.cpp. Same-round ratios only: this machine's memory bandwidth wanders from minute
# to minute, so a ratio of two medians taken minutes apart says little. Run it with nothing else
# on the machine (no build: builds overstated tova's lead by up to 1.6x on 2026-11-29).
#
# Usage: bench/three_engines.sh OUT_DIR MODEL.gguf...
# Environment (defaults in brackets):
#   TOVA      tova binary [build/bin/tova]        SIMD     tova's --simd [native]
#   LLAMA     llama.cpp build/bin (llama-bench) [/work/ext/llama.cpp/build/bin]
#   IK        ik_llama.cpp build/bin (llama-bench) [/work/ext/ik_llama.cpp/build/bin]
#             (for SIMD=avx2 give AVX2-only builds of both: -DGGML_NATIVE=OFF -DGGML_AVX2=ON
#             -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF)
#   THREADS   thread counts [2]     ROUNDS  rounds [3]     REPS  repetitions per run (-r) [2]
#   PROMPT    prompt tokens [512]   GEN     decoded tokens [64]
#   ENGINES   [tova llama.cpp ik ik-rtr]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: bench/three_engines.sh OUT_DIR MODEL.gguf...}
shift
[ $# -gt 0 ] || { echo "usage: bench/three_engines.sh OUT_DIR MODEL.gguf..." >&2; exit 1; }
T=${TOVA:-$here/build/bin/tova}
L=${LLAMA:-/work/ext/llama.cpp/build/bin}
IK=${IK:-/work/ext/ik_llama.cpp/build/bin}
simd=${SIMD:-native}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
reps=${REPS:-2}
prompt=${PROMPT:-512}
gen=${GEN:-64}
engines=(${ENGINES:-tova llama.cpp ik ik-rtr})
command -v node >/dev/null || { echo "node is needed to read the JSON (scripts/setup.sh)" >&2; exit 1; }
for e in "${engines[@]}"; do
  case $e in
    tova) [ -x "$T" ] || { echo "no tova at $T" >&2; exit 1; } ;;
    llama.cpp) [ -x "$L/llama-bench" ] || { echo "no llama-bench in $L" >&2; exit 1; } ;;
    ik|ik-rtr) [ -x "$IK/llama-bench" ] || { echo "no llama-bench in $IK" >&2; exit 1; } ;;
    *) echo "unknown engine '$e' (tova llama.cpp ik ik-rtr)" >&2; exit 1 ;;
  esac
done
mkdir -p "$out"
: >"$out/results.jsonl"
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)

record() {  # engine model threads round < llama-bench style JSON array
  node -e '
    const [engine, model, threads, round] = process.argv.slice(1);
    const text = require("fs").readFileSync(0, "utf8");
    if (text.indexOf("[") < 0) process.exit(0);  // the engine failed: its line says why
    const runs = JSON.parse(text.slice(text.indexOf("[")));
    for (const r of runs) {
      const test = r.n_prompt > 0 ? "pp" + r.n_prompt : "tg" + r.n_gen;
      console.log(JSON.stringify({engine, model, threads: +threads, round: +round, test,
        avg_ts: r.avg_ts, simd: r.simd_target || r.cpu_info || "", build: r.build_commit || ""}));
    }' "$@" >>"$out/results.jsonl"
}
run() {  # engine file threads round
  local e=$1 f=$2 t=$3 r=$4 m
  m=$(basename "$f" .gguf)
  echo "round $r/$rounds: $e $m -t $t" >&2
  case $e in
    tova) "$T" bench --simd "$simd" -m "$f" -p "$prompt" -n "$gen" -r "$reps" -t "$t" -o json ;;
    llama.cpp) "$L/llama-bench" -m "$f" -p "$prompt" -n "$gen" -r "$reps" -t "$t" -mmp 0 -o json 2>/dev/null ;;
    ik) "$IK/llama-bench" -m "$f" -p "$prompt" -n "$gen" -r "$reps" -t "$t" -mmp 0 -o json 2>/dev/null ;;
    ik-rtr) "$IK/llama-bench" -m "$f" -p "$prompt" -n "$gen" -r "$reps" -t "$t" -mmp 0 -rtr 1 -o json 2>/dev/null ;;
  esac | record "$e" "$m" "$t" "$r"
}

n=${#engines[@]}
for r in $(seq "$rounds"); do
  for f in "$@"; do
    for t in $threads; do
      for i in $(seq 0 $((n - 1))); do  # rotate the order each round
        e=${engines[$(((i + r - 1) % n))]}
        run "$e" "$f" "$t" "$r" || echo "round $r: $e on $(basename "$f") failed" >&2
      done
    done
  done
done

node - "$out/results.jsonl" "$cpu" "$simd" >"$out/table.md" <<'EOF'
const fs = require("fs");
const [file, cpu, simd] = process.argv.slice(2);
const rows = fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const cells = new Map();
for (const r of rows) {
  const k = [r.model, r.threads, r.test].join("|");
  if (!cells.has(k)) cells.set(k, {model: r.model, threads: r.threads, test: r.test, by: {}});
  const c = cells.get(k);
  (c.by[r.engine] ??= new Map()).set(r.round, r.avg_ts);
}
const median = (x) => {
  const s = [...x].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const f = (x) => x.toFixed(x >= 100 ? 1 : 2);
const simdOf = (e) => rows.find((r) => r.engine === e)?.simd ?? "";
console.log(`CPU: ${cpu}; tova --simd ${simd} (${simdOf("tova")}); llama.cpp: ${simdOf("llama.cpp")}; ` +
            `ik_llama.cpp: ${simdOf("ik") || simdOf("ik-rtr")}\n`);
console.log("| model | threads | test | tova tok/s | llama.cpp | ik_llama.cpp | ik -rtr 1 | " +
            "tova / ik best (median of rounds; range) | tova / llama.cpp (median; range) |");
console.log("|---|---:|---|---|---|---|---|---:|---:|");
for (const c of cells.values()) {
  const tova = c.by["tova"] ?? new Map();
  const list = (e) => c.by[e] ? [...c.by[e].values()].map(f).join(", ") : "-";
  const ratio = (other) => {
    const q = [...tova.keys()].map((k) => [tova.get(k), other(k)]).filter(([, o]) => o > 0)
      .map(([a, o]) => a / o);
    return q.length ? `**${median(q).toFixed(2)}x** (${Math.min(...q).toFixed(2)}-${Math.max(...q).toFixed(2)})` : "-";
  };
  const ikBest = (k) => Math.max(c.by["ik"]?.get(k) ?? 0, c.by["ik-rtr"]?.get(k) ?? 0);
  console.log(`| ${c.model} | ${c.threads} | ${c.test} | ${list("tova")} | ${list("llama.cpp")} | ` +
              `${list("ik")} | ${list("ik-rtr")} | ${ratio(ikBest)} | ` +
              `${ratio((k) => c.by["llama.cpp"]?.get(k) ?? 0)} |`);
}
EOF
cat "$out/table.md"
echo "results: $out/results.jsonl" >&2
