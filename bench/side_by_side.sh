#!/bin/bash
# The side-by-side of docs/PERFORMANCE.md ("Per machine and SIMD target"): tova and llama.cpp's
# llama-bench on the same random-weight GGUF files, alternating within each round, prompt
# processing (ppP) and decode (tgG) at depth 0 (or DEPTH), full cache, f16 K/V (or each of KV),
# then a table of tok/s per round and the ratio tova / llama.cpp (of the sums over rounds, and
# the lowest and highest round); with several K/V types also each engine's ratio of every type
# to the first. Run it under `quiet` on a shared machine.
#
# Usage: bench/side_by_side.sh LLAMA_BIN_DIR [OUT_DIR]
#   LLAMA_BIN_DIR  llama.cpp's build/bin (llama-bench), built outside this repository: e.g. one
#                  built with -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF ... to compare
#                  with SIMD=avx2
#   OUT_DIR        results.jsonl (one line per engine, model, thread count, round and test)
#                  and table.md (default: a new folder under /tmp)
# Environment (defaults in brackets):
#   SIMD      tova's --simd target [native]     THREADS  thread counts, e.g. "1 2" [2]
#   SHAPES    make-random shapes [smollm tinyllama]   TYPES  weight types [q4_0 q8_0 q4_k]
#   ROUNDS    alternating rounds [3]            REPS     repetitions per run (-r) [3]
#   PROMPT    prompt tokens [512]               GEN      decoded tokens [128]
#   MODELS    folder for the models, written by `tova make-random` when missing [/tmp/tova-models]
#   TOVA      tova binary [build/bin/tova]      LLAMA_ARGS extra llama-bench flags [-mmp 0]
#   KV        K/V storage types, e.g. "f16 q8_0" (tova --kv-type, llama.cpp -ctk/-ctv) [f16]
#   DEPTH     tokens in the cache before each test (tova -d, llama.cpp -d) [0]
#   ENGINES   which engines run: "tova llama.cpp", or "tova" alone (e.g. to compare K/V types
#             over more rounds) [tova llama.cpp]
# A quantized V needs llama.cpp's flash attention: give LLAMA_ARGS="-mmp 0 -fa 1" with KV q8_0.
# With several thread counts the table also gives each engine's speed-up over the first count.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
L=${1:?usage: bench/side_by_side.sh LLAMA_BIN_DIR [OUT_DIR]}
out=${2:-$(mktemp -d /tmp/side_by_side.XXXXXX)}
T=${TOVA:-$here/build/bin/tova}
simd=${SIMD:-native}
threads=${THREADS:-2}
shapes=${SHAPES:-smollm tinyllama}
types=${TYPES:-q4_0 q8_0 q4_k}
rounds=${ROUNDS:-3}
reps=${REPS:-3}
prompt=${PROMPT:-512}
gen=${GEN:-128}
models=${MODELS:-/tmp/tova-models}
llama_args=${LLAMA_ARGS:--mmp 0}
kv_types=${KV:-f16}
depth=${DEPTH:-0}
engines=${ENGINES:-tova llama.cpp}
case " $engines " in *" llama.cpp "*) [ -x "$L/llama-bench" ] || { echo "no llama-bench in $L" >&2; exit 1; } ;; esac
command -v node >/dev/null || { echo "node is needed to read the JSON (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$out" "$models"
: >"$out/results.jsonl"

files=()
for s in $shapes; do
  for ty in $types; do
    f="$models/$s-$ty.gguf"
    [ -f "$f" ] || "$T" make-random --shape "$s" --type "$ty" -o "$f" >&2
    files+=("$f")
  done
done

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
# Appends one JSON line per test of a run: engine, model, threads, round, test, tok/s, simd.
record() {  # engine model threads round kv < json
  node -e '
    const [engine, model, threads, round, kv] = process.argv.slice(1);
    const runs = JSON.parse(require("fs").readFileSync(0, "utf8"));
    for (const r of runs) {
      const test = (r.n_prompt > 0 ? "pp" + r.n_prompt : "tg" + r.n_gen) +
                   (r.n_depth > 0 ? " @ d" + r.n_depth : "");
      console.log(JSON.stringify({engine, model, threads: +threads, round: +round, kv, test,
        avg_ts: r.avg_ts, stddev_ts: r.stddev_ts,
        simd: r.simd_target || r.cpu_info || "", build: r.build_commit || ""}));
    }' "$@" >>"$out/results.jsonl"
}
run_llama() {  # file threads round kv
  case " $engines " in *" llama.cpp "*) ;; *) return 0 ;; esac
  # shellcheck disable=SC2086
  "$L/llama-bench" -m "$1" -p "$prompt" -n "$gen" -d "$depth" -r "$reps" -t "$2" -ctk "$4" \
    -ctv "$4" $llama_args -o json 2>/dev/null | record llama.cpp "$(basename "$1" .gguf)" "$2" "$3" "$4"
}
run_tova() {
  "$T" bench --simd "$simd" -m "$1" -p "$prompt" -n "$gen" -d "$depth" -r "$reps" -t "$2" \
    --kv-type "$4" -o json | record tova "$(basename "$1" .gguf)" "$2" "$3" "$4"
}

for r in $(seq "$rounds"); do
  for f in "${files[@]}"; do
    for t in $threads; do
      order=$kv_types  # the K/V types in reverse order on even rounds
      [ $((r % 2)) -eq 1 ] || order=$(echo "$kv_types" | tr ' ' '\n' | tac | tr '\n' ' ')
      for kv in $order; do
        echo "round $r/$rounds: $(basename "$f") -t $t K/V $kv" >&2
        if [ $((r % 2)) -eq 1 ]; then
          run_llama "$f" "$t" "$r" "$kv"; run_tova "$f" "$t" "$r" "$kv"
        else
          run_tova "$f" "$t" "$r" "$kv"; run_llama "$f" "$t" "$r" "$kv"
        fi
      done
    done
  done
done

node - "$out/results.jsonl" "$cpu" "$simd" "$threads" "$kv_types" >"$out/table.md" <<'EOF'
const fs = require("fs");
const [file, cpu, simd, threadList, kvList] = process.argv.slice(2);
const rows = fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const kvs = kvList.trim().split(/\s+/);
const key = (r) => [r.model, r.threads, r.test, r.kv].join("|");
const groups = new Map();
for (const r of rows) {
  if (!groups.has(key(r))) groups.set(key(r), {model: r.model, threads: r.threads, test: r.test,
                                                 kv: r.kv, llama: new Map(), tova: new Map()});
  groups.get(key(r))[r.engine === "tova" ? "tova" : "llama"].set(r.round, r.avg_ts);
}
const tovaSimd = rows.find((r) => r.engine === "tova")?.simd ?? "";
const llamaCpu = rows.find((r) => r.engine !== "tova")?.simd ?? "";
const f = (x) => x.toFixed(x >= 100 ? 1 : 2);
const sum = (m) => [...m.values()].reduce((a, b) => a + b, 0);
console.log(`CPU: ${cpu}; tova --simd ${simd} (${tovaSimd}); llama.cpp: ${llamaCpu}\n`);
console.log("| model | threads | test | K/V | llama.cpp tok/s | tova tok/s | tova / llama.cpp (sums) | per round |");
console.log("|---|---:|---|---|---|---|---:|---|");
for (const g of groups.values()) {
  if (g.llama.size === 0) {  // ENGINES=tova
    console.log(`| ${g.model} | ${g.threads} | ${g.test} | ${g.kv} | - | ` +
                `${[...g.tova.values()].map(f).join(", ")} | - | - |`);
    continue;
  }
  const rounds = [...g.tova.keys()].filter((k) => g.llama.has(k)).sort((a, b) => a - b);
  const ratios = rounds.map((k) => g.tova.get(k) / g.llama.get(k));
  console.log(`| ${g.model} | ${g.threads} | ${g.test} | ${g.kv} | ${rounds.map((k) => f(g.llama.get(k))).join(", ")} | ` +
              `${rounds.map((k) => f(g.tova.get(k))).join(", ")} | **${(sum(g.tova) / sum(g.llama)).toFixed(2)}x** | ` +
              `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x |`);
}
const counts = threadList.trim().split(/\s+/).map(Number);
if (counts.length > 1) {
  console.log(`\nSpeed-up over ${counts[0]} thread(s) (sums over rounds):\n`);
  console.log("| model | test | K/V | threads | llama.cpp | tova |");
  console.log("|---|---|---|---:|---:|---:|");
  for (const g of groups.values()) {
    if (g.threads === counts[0]) continue;
    const base = groups.get([g.model, counts[0], g.test, g.kv].join("|"));
    if (!base) continue;
    console.log(`| ${g.model} | ${g.test} | ${g.kv} | ${g.threads} | ${(sum(g.llama) / sum(base.llama)).toFixed(2)}x | ` +
                `${(sum(g.tova) / sum(base.tova)).toFixed(2)}x |`);
  }
}
if (kvs.length > 1) {
  console.log(`\nEach K/V type against ${kvs[0]} (sums over rounds; per round):\n`);
  console.log("| model | threads | test | K/V | llama.cpp | tova |");
  console.log("|---|---:|---|---|---|---|");
  const per = (m, b) => [...m.keys()].filter((k) => b.has(k)).map((k) => m.get(k) / b.get(k));
  const span = (x) => x.length ? `${Math.min(...x).toFixed(2)}-${Math.max(...x).toFixed(2)}x` : "-";
  for (const g of groups.values()) {
    if (g.kv === kvs[0]) continue;
    const base = groups.get([g.model, g.threads, g.test, kvs[0]].join("|"));
    if (!base) continue;
    console.log(`| ${g.model} | ${g.threads} | ${g.test} | ${g.kv} | ` +
                (g.llama.size ? `**${(sum(g.llama) / sum(base.llama)).toFixed(2)}x** (${span(per(g.llama, base.llama))})` : "-") + " | " +
                `**${(sum(g.tova) / sum(base.tova)).toFixed(2)}x** (${span(per(g.tova, base.tova))}) |`);
  }
}
EOF
cat "$out/table.md"
echo "results: $out/results.jsonl" >&2
