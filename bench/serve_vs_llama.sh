#!/usr/bin/env bash
# tova serve and llama-server side by side on one GGUF, same threads, loopback only: for each
# concurrency level and round, every configuration is started fresh, loaded with
# bench/serve_load.mjs (completions, streaming, greedy, ignore_eos, prompt of P token ids,
# G generated), and stopped; configurations alternate within a round so that drifts of the
# machine's memory bandwidth hit them all alike.
#
# Usage: bench/serve_vs_llama.sh MODEL.gguf LLAMA_BIN_DIR [OUT_DIR]
# Environment (defaults):
#   CONC="1 8 64"   concurrency levels         ROUNDS=2       rounds per level
#   PROMPT=256 GEN=128                         THREADS=2
#   KV_MEMORY=1.5G  tova's --kv-memory (full reserves --ctx 4096 tokens, so this admits as
#                   many full sequences as fit; bounded ones reserve their fixed size)
#   CONFIGS="llama full tova512 tova256"       which servers (see start_server)
# Writes OUT_DIR/results.jsonl (one object per run) and prints a markdown table of the means.
set -euo pipefail
model=${1:?model}
llama_bin=${2:?llama.cpp bin dir}
out=${3:-/tmp/serve_vs_llama}
here=$(cd "$(dirname "$0")/.." && pwd)
tova=${TOVA_BIN:-$here/build/bin/tova}
conc=${CONC:-1 8 64}
rounds=${ROUNDS:-2}
prompt=${PROMPT:-256}
gen=${GEN:-128}
threads=${THREADS:-2}
kv_memory=${KV_MEMORY:-1.5G}
configs=${CONFIGS:-llama full tova512 tova256}
port=${PORT:-18391}
mkdir -p "$out"
: > "$out/results.jsonl"

pid=
stop_server() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
}
trap stop_server EXIT

# start_server CONFIG CONCURRENCY: llama-server gets one slot per client with room for the
# prompt and the answer; tova gets the K/V memory budget and admits what fits.
start_server() {
  local cfg=$1 c=$2 per_seq=$((prompt + gen + 16))
  port=$((port + 1))  # a fresh port each time: the last server's may still be closing
  case "$cfg" in
    llama)
      "$llama_bin/llama-server" -m "$model" -t "$threads" --host 127.0.0.1 --port "$port" \
        -np "$c" -cb -c $((c * per_seq)) --no-webui >"$out/server.log" 2>&1 &
      ;;
    full)
      "$tova" serve -m "$model" -t "$threads" --port "$port" --ctx 4096 \
        --kv-memory "$kv_memory" --parallel 64 --queue 256 >"$out/server.log" 2>&1 &
      ;;
    tova512 | tova256)
      "$tova" serve -m "$model" -t "$threads" --port "$port" --ctx 4096 \
        --kv-memory "$kv_memory" --parallel 64 --queue 256 --kv-policy tova \
        --kv-budget "${cfg#tova}" >"$out/server.log" 2>&1 &
      ;;
    *)
      echo "serve_vs_llama.sh: unknown configuration '$cfg'" >&2
      exit 2
      ;;
  esac
  pid=$!
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "serve_vs_llama.sh: $cfg did not start:" >&2
      tail -5 "$out/server.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "serve_vs_llama.sh: $cfg not healthy after 120 s" >&2
  exit 1
}

for c in $conc; do
  per_client=1
  [ "$c" -eq 1 ] && per_client=2
  for r in $(seq 1 "$rounds"); do
    for cfg in $configs; do
      start_server "$cfg" "$c"
      api=openai
      [ "$cfg" = llama ] && api=llama-native  # see serve_load.mjs: its OpenAI stream can abort
      json=$(node "$here/bench/serve_load.mjs" --url "http://127.0.0.1:$port" --concurrency "$c" \
        --prompt "$prompt" --gen "$gen" --requests-per-client "$per_client" --api "$api" --json)
      stop_server
      echo "$json" | node -e '
        const rows = JSON.parse(require("fs").readFileSync(0, "utf8"));
        for (const row of rows) console.log(JSON.stringify({config: process.argv[1],
          round: Number(process.argv[2]), ...row}));' "$cfg" "$r" >>"$out/results.jsonl"
      tail -1 "$out/results.jsonl" >&2
    done
  done
done

node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
  const runs = lines.map((l) => JSON.parse(l));
  const key = (r) => `${r.concurrency}\t${r.config}`;
  const groups = new Map();
  for (const r of runs) (groups.get(key(r)) ?? groups.set(key(r), []).get(key(r))).push(r);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log("| concurrency | server | runs | gen tok/s | TTFT p50 ms | TTFT p99 ms | decode tok/s/stream | vs llama-server |");
  console.log("|---:|---|---:|---:|---:|---:|---:|---:|");
  for (const [k, rs] of groups) {
    const [c, cfg] = k.split("\t");
    const llama = groups.get(`${c}\tllama`);
    const tps = mean(rs.map((r) => r.tok_per_s));
    const ratio = llama ? (tps / mean(llama.map((r) => r.tok_per_s))).toFixed(2) + "x" : "";
    console.log(`| ${c} | ${cfg} | ${rs.length} | ${tps.toFixed(1)} | ` +
      `${mean(rs.map((r) => r.ttft_p50_ms)).toFixed(0)} | ${mean(rs.map((r) => r.ttft_p99_ms)).toFixed(0)} | ` +
      `${mean(rs.map((r) => r.decode_tok_per_s_per_stream)).toFixed(1)} | ${ratio} |`);
  }' "$out/results.jsonl"
