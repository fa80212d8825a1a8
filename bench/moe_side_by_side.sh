#!/bin/bash
# Issue 33's speed figures: tova against llama.cpp (34af94cd) and ik_llama.cpp on the two big
# mixture-of-experts files of the real shapes (random weights, `tova make-random`):
#   gpt-oss-20b-mxfp4.gguf   (--shape gpt-oss-20b --type mxfp4: MXFP4 experts, Q8_0 elsewhere)
#   qwen3-30b-a3b-q3_k.gguf  (--shape qwen3-30b-a3b --type q3_k)
# at THREADS threads, f16 K/V:
#   1. pp512 and tgGEN (decode) per file and SIMD target, engines alternating inside each round
#      (their order rotates from round to round): `native` is tova's best target against the
#      native builds, `avx2` is `tova --simd avx2` against the AVX2-only builds. Per-round tok/s,
#      medians, and tova / other per round and of the medians.
#   2. Depth (gpt-oss-20b shape): decode after DEPTH tokens with tova's full cache and with
#      `--kv-policy tova --kv-budget DEPTH_K` (chunked prefill), llama.cpp `-d DEPTH` and
#      ik_llama.cpp `-gp DEPTH,GEN` beside: tok/s and K/V bytes (tova's own figure; llama's from
#      its "KV buffer size" log lines).
#   3. Memory: tova's peak RSS over a prompt that touches nearly every expert, against the file
#      size (target RSS <= 1.1x the file: a file above half of MemAvailable is read into tova's
#      own memory with the page cache dropped behind the read, and one above 80 % is mapped,
#      model.cpp choose_weight_holding: one copy either way).
# Only one big file is loaded at a time and only one engine runs at a time (the files are
# ~12-14 GB on a 24 GiB machine). Run it on a quiet machine (`quiet` on the shared one), or on a
# busy one under `chrt -r 10` (real-time round robin: the engines take the cores whenever they
# compute; loading and page faults still wait on others).
#
# Time: about 1 minute per engine, file and target for pp512 + tg64 with its warm-up, plus a
# first read of each file from disk; with the defaults (3 rounds, 2 files, 2 targets, 3
# engines) about 35-45 minutes, the depth part about 8-12 minutes (one round), the memory part
# about 1 minute. ROUNDS=1 DEPTH_ROUNDS=0 takes ~12 minutes.
#
# Usage: bench/moe_side_by_side.sh [OUT_DIR]   (default: a new folder under /tmp)
# Environment (defaults in brackets); a binary that is missing is skipped and named in the header:
#   TOVA        tova binary [build/bin/tova]
#   LLAMA       llama.cpp native build/bin [/work/ext/llama.cpp/build/bin]
#   LLAMA_AVX2  llama.cpp AVX2-only build/bin [/work/ext/llama.cpp/build-avx2/bin]
#   IK          ik_llama.cpp native build/bin [/work/ext/ik_llama.cpp/build/bin]
#   IK_AVX2     ik_llama.cpp AVX2-only build/bin [/work/ext/ik_llama.cpp/build-avx2/bin]
#   MODELS      folder of the files [/work/models-bench]
#   FILES       file names in MODELS [gpt-oss-20b-mxfp4.gguf qwen3-30b-a3b-q3_k.gguf]
#   TARGETS     "native avx2" [both]        THREADS  thread count [2]
#   ROUNDS      alternating rounds [3]      REPS     repetitions per run (-r) [1]
#   PROMPT      prompt tokens [512]         GEN      decoded tokens [64]
#   DEPTH       depth of part 2 [8192]      DEPTH_K  tova's budget at depth [1024]
#   DEPTH_GEN   decoded tokens at depth [32]  DEPTH_ROUNDS  rounds of part 2, 0: skip [1]
#   DEPTH_FILE  the file of part 2 [gpt-oss-20b-mxfp4.gguf]   MEMORY  0 skips part 3 [1]
#   TOVA_ARGS, LLAMA_ARGS, IK_ARGS  extra flags for each engine's bench [none]
#   ENGINES     which engines run [tova llama.cpp ik_llama.cpp]
#   PREWARM     1: read the file through the page cache before each of tova's runs, for a mapped
#               tova (TOVA_ARGS=--mmap), so that it does not time page faults from disk after
#               another engine's private copy pushed the file out; by default tova reads these
#               files into memory of its own (dropping the page cache behind) and needs none [0]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d /tmp/moe_side_by_side.XXXXXX)}
T=${TOVA:-$here/build/bin/tova}
llama_native=${LLAMA:-/work/ext/llama.cpp/build/bin}
llama_avx2=${LLAMA_AVX2:-/work/ext/llama.cpp/build-avx2/bin}
ik_native=${IK:-/work/ext/ik_llama.cpp/build/bin}
ik_avx2=${IK_AVX2:-/work/ext/ik_llama.cpp/build-avx2/bin}
models=${MODELS:-/work/models-bench}
files=${FILES:-gpt-oss-20b-mxfp4.gguf qwen3-30b-a3b-q3_k.gguf}
targets=${TARGETS:-native avx2}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
reps=${REPS:-1}
prompt=${PROMPT:-512}
gen=${GEN:-64}
depth=${DEPTH:-8192}
depth_k=${DEPTH_K:-1024}
depth_gen=${DEPTH_GEN:-32}
depth_rounds=${DEPTH_ROUNDS:-1}
depth_file=${DEPTH_FILE:-gpt-oss-20b-mxfp4.gguf}
memory=${MEMORY:-1}
engines=${ENGINES:-tova llama.cpp ik_llama.cpp}
prewarm=${PREWARM:-0}
read -r -a tova_args <<<"${TOVA_ARGS:-}"
read -r -a llama_args <<<"${LLAMA_ARGS:-}"
read -r -a ik_args <<<"${IK_ARGS:-}"
command -v node >/dev/null || { echo "node is needed to read the JSON (scripts/setup.sh)" >&2; exit 1; }
[ -x "$T" ] || { echo "no tova binary at $T" >&2; exit 1; }
mkdir -p "$out"
: >"$out/results.jsonl"
log="$out/engines.log"
: >"$log"

# The llama-bench of an engine for a target, or nothing when it is not built (yet).
bin_of() {  # engine target
  local d
  case "$1:$2" in
    llama.cpp:native) d=$llama_native ;; llama.cpp:avx2) d=$llama_avx2 ;;
    ik_llama.cpp:native) d=$ik_native ;; ik_llama.cpp:avx2) d=$ik_avx2 ;;
    *) return 0 ;;
  esac
  [ -x "$d/llama-bench" ] && echo "$d/llama-bench"
  return 0
}
enabled() { case " $engines " in *" $1 "*) return 0 ;; esac; return 1; }

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
flags=$(grep -o -w 'avx2\|avx512f\|avx512bw\|avx512vl\|avx512_vnni\|avx512_bf16\|avxvnni' /proc/cpuinfo | sort -u | tr '\n' ' ')
header="$out/header.md"
{
  echo "# bench/moe_side_by_side.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- CPU: $cpu ($(nproc) cores); flags: $flags"
  for tg in $targets; do
    echo "- target $tg: tova --simd $tg (the SIMD target it ran is in the table's tova rows);" \
         "llama.cpp $(bin_of llama.cpp "$tg" || true); ik_llama.cpp $(bin_of ik_llama.cpp "$tg" || true)"
  done
  echo "- tova $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?') ($T)"
  echo "- $threads threads, f16 K/V, pp$prompt and tg$gen, $rounds rounds x $reps repetitions;" \
       "depth $depth (tova k=$depth_k), $depth_rounds round(s); prewarm $prewarm; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- engines: $engines (a missing binary is skipped: its cells read '-')"
  echo
} | tee "$header"

# Appends one JSON line per test of a bench run (tova bench and llama-bench both write JSON).
record() {  # engine file target round part < json
  node -e '
    const [engine, file, target, round, part] = process.argv.slice(1);
    let runs = [];
    try { runs = JSON.parse(require("fs").readFileSync(0, "utf8")); } catch (e) {}
    for (const r of runs) {
      let test;
      if (r.n_prompt > 0 && r.n_gen > 0) test = "tg" + r.n_gen + " @ d" + r.n_prompt;  // ik -gp
      else test = (r.n_prompt > 0 ? "pp" + r.n_prompt : "tg" + r.n_gen) +
                  (r.n_depth > 0 ? " @ d" + r.n_depth : "");
      const policy = r.kv_policy ? r.kv_policy + (r.kv_budget > 0 ? " k=" + r.kv_budget : "") : "full";
      console.log(JSON.stringify({engine, file, target, round: +round, part, test, policy,
        avg_ts: r.avg_ts, kv_bytes: r.kv_bytes ?? null, simd: r.simd_target || r.cpu_info || ""}));
    }' "$@" >>"$out/results.jsonl"
}
# Sums llama.cpp's "KV buffer size = X MiB" lines (and a hybrid's "RS buffer size" lines, its
# recurrent states, which tova's figure counts too) of the last run's log into bytes.
kv_from_log() { awk '/KV buffer size|RS buffer size/ { for (i = 1; i <= NF; ++i) if ($i == "=") s += $(i + 1) } END { printf "%.0f", s * 1048576 }' "$1"; }

run_engine() {  # engine file target round
  local e=$1 f=$2 tg=$3 r=$4 b
  enabled "$e" || return 0
  echo "  $e" >&2
  if [ "$e" = tova ]; then
    [ "$prewarm" = 1 ] && cat "$f" >/dev/null
    "$T" bench --simd "$tg" -m "$f" -p "$prompt" -n "$gen" -r "$reps" -t "$threads" --kv-type f16 \
      "${tova_args[@]}" -o json 2>>"$log" | record tova "$(basename "$f")" "$tg" "$r" speed
  else
    b=$(bin_of "$e" "$tg"); [ -n "$b" ] || return 0
    local extra=("${llama_args[@]}"); [ "$e" = ik_llama.cpp ] && extra=("${ik_args[@]}")
    "$b" -m "$f" -p "$prompt" -n "$gen" -r "$reps" -t "$threads" -ctk f16 -ctv f16 "${extra[@]}" \
      -o json 2>>"$log" | record "$e" "$(basename "$f")" "$tg" "$r" speed
  fi
}

# Part 1: speed. One file at a time (the page cache holds one), all rounds of it together.
read -r -a engine_list <<<"$engines"
n_eng=${#engine_list[@]}
for fn in $files; do
  f="$models/$fn"
  [ -f "$f" ] || { echo "missing $f: skipped" | tee -a "$header" >&2; continue; }
  for r in $(seq "$rounds"); do
    for tg in $targets; do
      echo "round $r/$rounds: $fn, $tg" >&2
      for i in $(seq 0 $((n_eng - 1))); do  # engines in rotated order
        run_engine "${engine_list[$(((i + r - 1) % n_eng))]}" "$f" "$tg" "$r"
      done
    done
  done
done

# Part 2: depth, native target.
f="$models/$depth_file"
if [ "$depth_rounds" -gt 0 ] && [ -f "$f" ]; then
  for r in $(seq "$depth_rounds"); do
    echo "depth round $r/$depth_rounds: $depth_file at depth $depth" >&2
    if enabled tova; then
      "$T" bench -m "$f" -p 0 -n "$depth_gen" -d "$depth" -r 1 -t "$threads" --kv-type f16 \
        "${tova_args[@]}" -o json 2>>"$log" | record tova "$depth_file" native "$r" depth
      "$T" bench -m "$f" -p 0 -n "$depth_gen" -d "$depth" -r 1 -t "$threads" --kv-type f16 \
        --kv-policy tova --kv-budget "$depth_k" --kv-prefill chunk:512 "${tova_args[@]}" -o json \
        2>>"$log" | record tova "$depth_file" native "$r" depth
    fi
    for e in llama.cpp ik_llama.cpp; do
      enabled "$e" || continue
      b=$(bin_of "$e" native); [ -n "$b" ] || continue
      : >"$out/depth.log"
      if [ "$e" = llama.cpp ]; then
        "$b" -m "$f" -p 0 -n "$depth_gen" -d "$depth" -r 1 -t "$threads" -ctk f16 -ctv f16 -v \
          "${llama_args[@]}" -o json 2>"$out/depth.log" >"$out/depth.json" || true
      else
        "$b" -m "$f" -p 0 -n 0 -gp "$depth,$depth_gen" -r 1 -t "$threads" -ctk f16 -ctv f16 -v \
          "${ik_args[@]}" -o json 2>"$out/depth.log" >"$out/depth.json" || true
      fi
      cat "$out/depth.log" >>"$log"
      kv=$(kv_from_log "$out/depth.log")
      node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8") || "[]");
               for (const r of j) r.kv_bytes = +process.argv[1] || null;
               console.log(JSON.stringify(j));' "$kv" <"$out/depth.json" \
        | record "$e" "$depth_file" native "$r" depth
    done
  done
fi

# Part 3: tova's peak RSS against the file, on a prompt that routes tokens to nearly every expert.
mem="$out/memory.md"
: >"$mem"
if [ "$memory" != 0 ]; then
  echo "## Memory: tova's peak RSS against the file (target <= 1.1x)" >>"$mem"
  echo >>"$mem"
  echo "| file | file GiB | MemAvailable GiB before | tova loads by | peak RSS GiB | RSS / file |" >>"$mem"
  echo "|---|---:|---:|---|---:|---:|" >>"$mem"
  for fn in $files; do
    f="$models/$fn"
    [ -f "$f" ] || continue
    size=$(stat -c %s "$f")
    avail=$(awk '/^MemAvailable/ { print $2 * 1024 }' /proc/meminfo)
    mode=$(awk -v s="$size" -v a="$avail" 'BEGIN { print (s > a / 5 * 4) ? "mapping" : (s > a / 2) ? "own memory, page cache dropped" : "own memory" }')
    /usr/bin/time -o "$out/rss.txt" -f '%M' "$T" bench -m "$f" -p 256 -n 0 -r 1 --no-warmup \
      -t "$threads" "${tova_args[@]}" -o json >/dev/null 2>>"$log"
    rss_kb=$(tail -1 "$out/rss.txt")
    awk -v fn="$fn" -v s="$size" -v a="$avail" -v m="$mode" -v k="$rss_kb" 'BEGIN {
      g = 1024 ^ 3; r = k * 1024 / s
      printf "| %s | %.2f | %.2f | %s | %.2f | **%.3fx** %s |\n", fn, s / g, a / g, m, k * 1024 / g, r,
             (r <= 1.1 ? "(<= 1.1x)" : "(ABOVE 1.1x)") }' >>"$mem"
  done
fi

node - "$out/results.jsonl" >"$out/table.md" <<'EOF'
const fs = require("fs");
const text = fs.readFileSync(process.argv[2], "utf8").trim();
const rows = text ? text.split("\n").map((l) => JSON.parse(l)) : [];
const med = (a) => { const s = [...a].sort((x, y) => x - y), n = s.length;
                     return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
const f = (x) => Number.isFinite(x) ? x.toFixed(x >= 100 ? 1 : 2) : "-";
const others = ["llama.cpp", "ik_llama.cpp"];
const speed = rows.filter((r) => r.part === "speed");
const groups = new Map();
for (const r of speed) {
  const k = [r.file, r.target, r.test].join("|");
  if (!groups.has(k)) groups.set(k, {file: r.file, target: r.target, test: r.test, by: {}});
  const g = groups.get(k);
  (g.by[r.engine] ??= new Map()).set(r.round, r.avg_ts);
}
console.log("## Speed (tok/s per round; medians; tova / other per round and of the medians)\n");
const simds = new Map(speed.filter((r) => r.engine === "tova").map((r) => [r.target, r.simd]));
console.log("tova's SIMD target: " + [...simds].map(([t, s]) => `${t} = ${s}`).join(", ") + "\n");
console.log("| file | target | test | tova | llama.cpp | ik_llama.cpp | tova / llama.cpp | tova / ik_llama.cpp |");
console.log("|---|---|---|---|---|---|---|---|");
for (const g of groups.values()) {
  const cell = (e) => g.by[e] ? `${[...g.by[e].values()].map(f).join(", ")} (med ${f(med([...g.by[e].values()]))})` : "-";
  const ratio = (e) => {
    const t = g.by.tova, o = g.by[e];
    if (!t || !o) return "-";
    const per = [...t.keys()].filter((k) => o.has(k)).map((k) => t.get(k) / o.get(k));
    return `**${(med([...t.values()]) / med([...o.values()])).toFixed(2)}x** (${per.map((x) => x.toFixed(2)).join(", ")})`;
  };
  console.log(`| ${g.file} | ${g.target} | ${g.test} | ${cell("tova")} | ${cell("llama.cpp")} | ` +
              `${cell("ik_llama.cpp")} | ${ratio("llama.cpp")} | ${ratio("ik_llama.cpp")} |`);
}
const depth = rows.filter((r) => r.part === "depth");
if (depth.length) {
  console.log("\n## Depth (decode after the depth; K/V bytes as each engine reports them)\n");
  console.log("| engine | cache | test | tok/s per round | median | K/V MiB |");
  console.log("|---|---|---|---|---:|---:|");
  const dg = new Map();
  for (const r of depth) {
    const k = [r.engine, r.policy, r.test].join("|");
    if (!dg.has(k)) dg.set(k, {r, ts: [], kv: r.kv_bytes});
    dg.get(k).ts.push(r.avg_ts);
  }
  for (const {r, ts, kv} of dg.values()) {
    console.log(`| ${r.engine} | ${r.policy} | ${r.test} | ${ts.map(f).join(", ")} | ${f(med(ts))} | ` +
                `${kv ? (kv / 1048576).toFixed(1) : "-"} |`);
  }
  const full = [...dg.values()].find((g) => g.r.engine === "tova" && g.r.policy === "full");
  for (const g of dg.values()) {
    if (g === full || !full) continue;
    console.log(`\n${g.r.engine} ${g.r.policy}: tova full / it = ${(med(full.ts) / med(g.ts)).toFixed(2)}x tok/s`);
  }
}
EOF
cat "$out/table.md" "$mem"
cat "$header" "$out/table.md" "$mem" >"$out/report.md"
echo "results: $out/results.jsonl, report: $out/report.md, engines' logs: $log" >&2
