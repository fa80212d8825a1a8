#!/bin/bash
# The paper's Table 1 across K/V storage types (docs/PERFORMANCE.md, "Table 1 with quantized
# K/V"): `tova throughput` at ONE K/V memory, the memory of FULL_BATCH `full` sequences of CTX
# tokens in the first type (the paper: 8 in f16), each type run on its own and the types
# alternating in order from round to round; then a table of aggregate tok/s per round and each
# row's ratio to the same multi-state in the first type (of the sums over rounds, and the lowest
# and highest round). Run it under `quiet` on a shared machine.
#
# Usage: bench/throughput_kv_types.sh MODEL [OUT_DIR]
#   OUT_DIR   one results.json per round and type (tova throughput -o json) and table.md
#             (default: a new folder under /tmp)
# Environment (defaults in brackets):
#   TYPES     K/V types, the first sets the memory [f16 q8_0]
#   POLICIES  --kv-policy [full,tova]        BUDGETS  --kv-budget [512]
#   FULL_BATCH `full` sequences the memory holds [8]   CTX  tokens per sequence [4096]
#   THREADS   -t [2]   ROUNDS [2]   STEPS --steps [8]   REPS -r [2]
#   TOVA      tova binary [build/bin/tova]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
model=${1:?usage: bench/throughput_kv_types.sh MODEL [OUT_DIR]}
out=${2:-$(mktemp -d /tmp/throughput_kv_types.XXXXXX)}
T=${TOVA:-$here/build/bin/tova}
read -r -a types <<<"${TYPES:-f16 q8_0}"
policies=${POLICIES:-full,tova}
budgets=${BUDGETS:-512}
full_batch=${FULL_BATCH:-8}
ctx=${CTX:-4096}
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
steps=${STEPS:-8}
reps=${REPS:-2}
command -v node >/dev/null || { echo "node is needed to read the JSON (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$out"

memory=""  # bytes, from the first run (--full-batch in the first type)
run() {  # round type
  local budget_flag=(--kv-memory "$memory")
  [ -n "$memory" ] || budget_flag=(--full-batch "$full_batch")
  echo "round $1/$rounds: --kv-type $2 ${budget_flag[*]}" >&2
  "$T" throughput -m "$model" "${budget_flag[@]}" --ctx "$ctx" --kv-policy "$policies" \
    --kv-budget "$budgets" --kv-type "$2" -t "$threads" -r "$reps" --steps "$steps" -o json \
    >"$out/r$1-$2.json"
  [ -n "$memory" ] || memory=$(node -e \
    'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].kv_memory)' \
    "$out/r$1-$2.json")
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    for ty in "${types[@]}"; do run "$r" "$ty"; done
  else
    for ((i = ${#types[@]} - 1; i >= 0; i--)); do run "$r" "${types[$i]}"; done
  fi
done

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
node - "$out" "$cpu" "${types[*]}" "$rounds" >"$out/table.md" <<'EOF'
const fs = require("fs");
const [dir, cpu, typeList, roundCount] = process.argv.slice(2);
const types = typeList.split(" ");
const rows = [];
for (let r = 1; r <= +roundCount; ++r) {
  for (const t of types) {
    for (const x of JSON.parse(fs.readFileSync(`${dir}/r${r}-${t}.json`, "utf8"))) {
      rows.push({...x, round: r, type: t});
    }
  }
}
const label = (x) => x.budget === null ? x.policy : `${x.policy} k=${x.budget}`;
const groups = new Map();
for (const x of rows) {
  const k = label(x) + "|" + x.type;
  if (!groups.has(k)) groups.set(k, {label: label(x), type: x.type, x, ts: new Map()});
  groups.get(k).ts.set(x.round, x.avg_ts);
}
const sum = (m) => [...m.values()].reduce((a, b) => a + b, 0);
const ratio = (g, b) => {
  const per = [...g.ts.keys()].filter((k) => b.ts.has(k)).map((k) => g.ts.get(k) / b.ts.get(k));
  return `**${(sum(g.ts) / sum(b.ts)).toFixed(2)}x** (${Math.min(...per).toFixed(2)}-` +
         `${Math.max(...per).toFixed(2)}x)`;
};
const first = rows[0];
const mib = (b) => (b / 1048576).toFixed(2) + " MiB";
const fullFirst = groups.get(`${first.policy}|${types[0]}`);
console.log(`${first.model_type}, CPU ${cpu}, ${first.n_threads} threads, SIMD ${first.simd_target}, ` +
            `ctx ${first.ctx}, K/V memory ${mib(first.kv_memory)} (${first.kv_memory} bytes)\n`);
console.log(`| multi-state | K/V | K/V per seq | batch | step ms | aggregate tok/s per round | vs the same in ${types[0]} | vs ${label(first)} ${types[0]} |`);
console.log("|---|---|---:|---:|---:|---|---:|---:|");
for (const g of groups.values()) {
  const base = groups.get(`${g.label}|${types[0]}`);
  console.log(`| ${g.label} | ${g.type} | ${mib(g.x.bytes_per_seq)} | ${g.x.batch} | ` +
              `${rows.filter((x) => label(x) === g.label && x.type === g.type).map((x) => x.step_ms.toFixed(1)).join(", ")} | ` +
              `${[...g.ts.values()].map((v) => v.toFixed(1)).join(", ")} | ` +
              `${g.type === types[0] ? "" : ratio(g, base)} | ${fullFirst && g !== fullFirst ? ratio(g, fullFirst) : ""} |`);
}
EOF
cat "$out/table.md"
echo "results: $out" >&2
