#!/bin/bash
# Held-back fixtures against llama.cpp: tova on files it was never tuned on. For every
# mixture-of-experts and hybrid family (qwen3moe, gpt-oss, qwen2moe, Mixtral, qwen35,
# qwen35moe, smollm3, gemma4, lfm2, lfm2moe, granitehybrid, nemotron_h, nemotron_h_moe, qwen3next, falcon-h1) this makes fixtures of other shapes and seeds than the committed
# ones (`tova make-random --arch FAMILY --set ...`: other head counts, GQA ratios, expert
# counts and top-k, windows, layer counts, rows that no super-block divides), quantizes their
# F32 file with llama-quantize into every mix it writes from an F32 file without an importance
# matrix, writes tova's own `--type` files too, and compares tova's logits with llama.cpp's
# (scripts/llama_dump.cpp over libllama, one thread, F32 K/V, flash attention off):
#
#   batch   the 128 positions of ../shared/golden/tokens-128.json in one batch;
#   decode  the first 16 of them then llama.cpp's 64-token greedy continuation, fed to tova one
#           token at a time (-b 1: the decode kernels); "greedy" counts the continuation tokens
#           that are tova's argmax too (teacher-forced).
#
# For a quantized file, two comparisons (tests/model/quant_golden_test.cpp's):
#   quant   tova's default mode (activations rounded to Q8_0/Q8_K blocks as llama.cpp does)
#           against llama.cpp on the same file;
#   deq     against llama.cpp on the file dequantized to F32 by
#           `llama-quantize --allow-requantize FILE OUT F32` (the weights' exact values): tova's
#           default mode (rel L2, top-1, greedy: column "deq") and tova --f32-activations
#           (rel L2: column "f32a/deq"); beside the verdict, llama.cpp's own distance between the
#           two ("cpp q/deq": how far rounding activations alone moves this network).
# Columns: rel L2, worst pos(ition's rel L2), max abs, top-1 (of 128) are tova against
# llama.cpp on the same file over one batch; greedy the continuation fed one at a time. On the
# F32 row, top-1 counts the batch and the same 128 fed one at a time (d: that run's rel L2).
# Bounds (issues 33 and 34): F32 rel L2 <= 1e-3 (gemma4 2e-3, llama.cpp's GELU is a float16
# table); a quantized file within 3e-2 of llama.cpp's logits or of the dequantized file's; top-1
# agreement >= 90% of positions. Checked here, stricter: every F32 position (not only the whole
# sequence) within the F32 bound; --f32-activations against the dequantized file within the F32
# bound too (the same numbers computed by two engines); a quantized file passes when tova's
# default mode is within 3e-2 over the sequence with top-1 and greedy >= 90% against llama.cpp
# on the same file or against it on the dequantized file. A row that misses prints MISS and the
# script exits 1 after the table.
#
# llama.cpp is built OUTSIDE the repository (never committed): LLAMA_DIR (default
# /work/ext/llama.cpp; libllama and llama-quantize in $LLAMA_DIR/build/bin), upstream commit
# 34af94cd9ab277632e27caeec2d41de2fd091b31 (the commit ../shared/ANCHORS.md names).
#
#   scripts/check_heldback.sh [BUILD_DIR]          (run from the repository root, niced)
#   ONLY="gpt-oss-a qwen35" scripts/check_heldback.sh   (cases whose name starts with these)
#   TYPES="Q4_K_M IQ4_XS" TOVA_TYPES="q8_0" ...   (other llama-quantize mixes / tova types;
#   NARROW_TYPES, NARROW_TOVA_TYPES: those of the cases whose rows are not 256 wide)
#   WORK=/tmp/hb scripts/check_heldback.sh         (keep the files there)
#   PRESET=NAME scripts/check_heldback.sh          (the runs of docs/ARCHITECTURES.md's table,
#                                                   one at a time: see PRESET below)
set -uo pipefail
BUILD=${1:-build}
LLAMA_DIR=${LLAMA_DIR:-/work/ext/llama.cpp}
SHARED=${TOVA_SHARED_DIR:-../shared}
TOVA="$BUILD/bin/tova"
QUANTIZE="$LLAMA_DIR/build/bin/llama-quantize"
TOKENS="$SHARED/golden/tokens-128.json"
# Debian's python3 itself: a version manager's shim costs several processes per call.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
N_PROMPT=16
N_GREEDY=64
# Every mix llama-quantize writes from an F32 file without an importance matrix into which tova
# could load (the IQ1/IQ2/IQ3 mixes need one), and tova's own --type files.
TYPES=${TYPES-"Q2_K Q3_K_M IQ4_XS IQ4_NL MXFP4_MOE Q4_K_M Q5_K_M Q6_K Q3_K_S Q3_K_L Q4_K_S Q5_K_S Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 F16 BF16"}
TOVA_TYPES=${TOVA_TYPES-"f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4"}
# Rows that no super-block divides take llama-quantize's fallback types (Q4_0, Q5_0, Q5_1, Q8_0,
# IQ4_NL, F16) whatever the mix: a few mixes cover them (IQ4_NL and IQ4_XS too: the hybrid
# families' narrow cases must be covered by both, issue 34).
NARROW_TYPES=${NARROW_TYPES-"Q2_K Q3_K_M IQ4_XS IQ4_NL MXFP4_MOE Q4_K_M Q5_K_M Q4_1 Q8_0"}
NARROW_TOVA_TYPES=${NARROW_TOVA_TYPES-"q4_k iq4_nl iq4_xs mxfp4"}
# The runs behind docs/ARCHITECTURES.md's table (the whole default set is hundreds of runs; on a
# shared 2-core machine it was run in these parts). A preset sets the type lists, and ONLY unless
# it is given.
case "${PRESET:-}" in
  "") ;;
  first)  # 2026-11-29 04:59: the first run (its later rows were cut off by the time it had)
    TYPES="Q2_K Q3_K_M IQ4_XS IQ4_NL MXFP4_MOE Q4_K_M Q6_K Q8_0" TOVA_TYPES="mxfp4 iq4_xs q3_k q2_k"
    NARROW_TYPES="Q2_K Q3_K_M IQ4_XS MXFP4_MOE Q4_1" NARROW_TOVA_TYPES="mxfp4" ;;
  kmixes)  # the k-quant mixes the first run did not reach, on every 256-wide case
    ONLY=${ONLY-"qwen3moe-a gpt-oss-a qwen2moe-a mixtral-a qwen35-a qwen35moe-a smollm3-a gemma4-a"}
    TYPES="Q3_K_S Q3_K_L Q4_K_S Q5_K_S Q5_K_M" TOVA_TYPES="" ;;
  qwen35moe)  # the rest of qwen35moe-a's mixes, and tova's IQ4 and MXFP4 files of it
    ONLY=${ONLY-"qwen35moe-a"}
    TYPES="IQ4_NL MXFP4_MOE Q4_K_M Q6_K Q8_0" TOVA_TYPES="iq4_nl iq4_xs mxfp4" ;;
  hybrid-iq4)  # IQ4_NL (and tova's IQ4 files) of the narrow hybrid cases
    ONLY=${ONLY-"qwen35-b smollm3-b gemma4-b"}
    NARROW_TYPES="IQ4_NL" NARROW_TOVA_TYPES="iq4_nl iq4_xs" ;;
  gemma4e)  # Gemma 4's E variant (per-layer inputs, shared-K/V layers) and its MoE variant
    ONLY=${ONLY-"gemma4e gemma4moe"}
    TYPES="Q2_K Q3_K_M IQ4_XS IQ4_NL Q4_K_M Q5_K_M Q6_K Q8_0 Q4_0" TOVA_TYPES="q4_k iq4_xs"
    NARROW_TYPES="IQ4_XS IQ4_NL Q4_1 Q8_0" NARROW_TOVA_TYPES="iq4_nl" ;;
  *) echo "check_heldback.sh: unknown PRESET '$PRESET' (first, kmixes, qwen35moe, hybrid-iq4, gemma4e)" >&2
    exit 2 ;;
esac
if [ -z "${WORK:-}" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"

# name | family (--arch) | seed | --set fields. Shapes the committed fixtures do not have: widths
# of 256 (every tensor gets its mix's own block type) and widths no super-block divides (96,
# 128, 160: llama-quantize's fallback types), other head counts and GQA ratios (1:1 to 8:1),
# expert counts 3-16 with top-k from 1 to all, other windows and layer patterns. Weights are
# N(0, 0.15 sqrt(64 / n_embd)): the committed fixtures' 0.15 at 64 wide, scaled so that a wider
# layer has the same gain (tiny-quant's 0.08 at 256 likewise). At 0.15 a 256-wide network of 8
# layers amplifies a one-step change of one int8 activation (two engines' float sums landing on
# either side of a rounding boundary) ~100-fold, to ~1e-2 in every later position.
CASES=(
  "qwen3moe-a|qwen3moe|11|n_embd=256 n_layer=3 n_head=8 n_head_kv=2 head_dim=64 n_expert=16 n_expert_used=3 n_ff_exp=256 weight_std=0.075"
  "qwen3moe-b|qwen3moe|12|n_embd=96 n_head=6 n_head_kv=3 head_dim=16 n_expert=4 n_expert_used=4 n_ff_exp=64 weight_std=0.12"
  "gpt-oss-a|gpt-oss|21|n_embd=256 n_layer=3 n_head=8 n_head_kv=4 head_dim=32 sliding_window=8 n_expert=8 n_expert_used=4 n_ff_exp=256 weight_std=0.075"
  "gpt-oss-b|gpt-oss|22|n_embd=128 n_layer=2 n_head=4 n_head_kv=4 head_dim=64 sliding_window=40 n_expert=4 n_expert_used=1 n_ff_exp=96 weight_std=0.106"
  "qwen2moe-a|qwen2moe|31|n_embd=256 n_head=4 n_head_kv=1 n_expert=6 n_expert_used=3 n_ff_exp=256 n_ff_shexp=512 weight_std=0.075"
  "qwen2moe-b|qwen2moe|32|n_embd=160 n_layer=3 n_head=5 n_head_kv=5 n_expert=16 n_expert_used=5 n_ff_exp=64 n_ff_shexp=32 weight_std=0.095"
  "mixtral-a|mixtral|41|n_embd=256 n_layer=3 n_head=8 n_head_kv=2 n_ff=256 n_expert=4 n_expert_used=2 weight_std=0.075"
  "mixtral-b|mixtral|42|n_embd=128 n_head=2 n_head_kv=1 n_ff=96 n_expert=3 n_expert_used=3 weight_std=0.106"
  "qwen35-a|qwen35|51|n_embd=256 n_layer=4 n_head=8 n_head_kv=2 head_dim=64 n_ff=512 ssm_state=32 ssm_groups=2 ssm_v_heads=6 full_attention_interval=2 weight_std=0.075"
  "qwen35-b|qwen35|52|n_embd=96 n_layer=6 n_head=2 n_head_kv=1 head_dim=16 n_ff=96 ssm_state=16 ssm_groups=4 ssm_v_heads=4 ssm_conv_kernel=3 full_attention_interval=3 weight_std=0.12"
  "qwen35moe-a|qwen35moe|61|n_embd=256 n_layer=4 n_head=4 n_head_kv=1 head_dim=64 ssm_state=32 ssm_groups=1 ssm_v_heads=4 n_expert=16 n_expert_used=4 n_ff_exp=256 n_ff_shexp=256 weight_std=0.075"
  "smollm3-a|smollm3|71|n_embd=256 n_layer=8 n_head=8 n_head_kv=2 n_ff=512 weight_std=0.075"
  "smollm3-b|smollm3|72|n_embd=96 n_layer=5 n_head=3 n_head_kv=1 n_ff=160 weight_std=0.12"
  "gemma4-a|gemma4|81|n_embd=256 n_layer=4 n_head=8 n_head_kv=2 head_dim=64 n_ff=512 sliding_window=8 gemma4.swa_pattern=2 gemma4.head_dim_swa=32 gemma4.n_head_kv_swa=4 gemma4.rope_partial=0.5 weight_std=0.075"
  "gemma4-b|gemma4|82|n_embd=64 n_layer=7 n_head=2 n_head_kv=1 head_dim=32 sliding_window=24 gemma4.swa_pattern=3 gemma4.head_dim_swa=16 gemma4.n_head_kv_swa=1 weight_std=0.15"
  # Gemma 4 E: per-layer inputs, the last layers reading an earlier layer's K/V (8 layers, the
  # last two shared, double-wide; 5 layers, the last one shared, K = V on global layers), and
  # the MoE variant (a dense feed-forward beside 8 experts, 3 chosen).
  "gemma4e-a|gemma4|91|n_embd=256 n_layer=8 n_head=4 n_head_kv=2 head_dim=64 n_ff=512 sliding_window=12 gemma4.swa_pattern=3 gemma4.head_dim_swa=32 gemma4.n_head_kv_swa=2 gemma4.n_shared_kv=2 gemma4.n_embd_per_layer=64 gemma4.double_wide_mlp=1 gemma4.k_eq_v=0 weight_std=0.075"
  "gemma4e-b|gemma4|92|n_embd=96 n_layer=5 n_head=2 n_head_kv=1 head_dim=32 n_ff=96 sliding_window=20 gemma4.swa_pattern=2 gemma4.head_dim_swa=16 gemma4.n_head_kv_swa=1 gemma4.n_shared_kv=1 gemma4.n_embd_per_layer=32 gemma4.k_eq_v=1 weight_std=0.12"
  "gemma4moe-a|gemma4|93|n_embd=256 n_layer=3 n_head=4 n_head_kv=2 head_dim=64 n_ff=256 sliding_window=8 gemma4.swa_pattern=3 gemma4.head_dim_swa=32 gemma4.n_head_kv_swa=2 n_expert=8 n_expert_used=3 n_ff_exp=128 weight_std=0.075"
  # lfm2: gated short convolutions of kernel 4 (the committed fixture's 3) around attention at
  # layers 2 and 5, and of kernel 2 with one attention layer (2) of three.
  "lfm2-a|lfm2|101|n_embd=256 n_layer=6 n_head=8 n_head_kv=2 n_ff=512 shortconv_l_cache=4 weight_std=0.075"
  "lfm2-b|lfm2|102|n_embd=96 n_layer=3 n_head=3 n_head_kv=1 n_ff=160 shortconv_l_cache=2 weight_std=0.12"
  # lfm2moe: one leading dense layer, 16 experts of 256 with 4 chosen by sigmoid + selection bias.
  "lfm2moe-a|lfm2moe|111|n_embd=256 n_layer=6 n_head=8 n_head_kv=2 n_ff=512 n_expert=16 n_expert_used=4 n_ff_exp=256 n_dense_lead=1 weight_std=0.075"
  # granitehybrid: Mamba2 around attention at 2 and 5, 8 heads of 64 in one group, state 64,
  # kernel 3, Granite 4.0-H's own multipliers (12, 0.22, 1/128, 6); 6 heads of 32 in 3 groups,
  # state 8, kernel 2, one attention layer (2) of four with RoPE on (rope.scaling.finetuned);
  # the MoE variant: 16 experts of 128, 4 chosen, a shared expert of 256, 16 heads in 2 groups.
  "granitehybrid-a|granitehybrid|121|n_embd=256 n_layer=6 n_head=8 n_head_kv=2 n_ff=512 mamba2_d_inner=512 mamba2_heads=8 mamba2_groups=1 mamba2_d_state=64 mamba2_conv_kernel=3 embedding_scale=12 residual_scale=0.22 attention_scale=0.0078125 weight_std=0.075"
  "granitehybrid-b|granitehybrid|122|n_embd=96 n_layer=4 n_head=3 n_head_kv=1 n_ff=160 mamba2_d_inner=192 mamba2_heads=6 mamba2_groups=3 mamba2_d_state=8 mamba2_conv_kernel=2 rope_finetuned=1 weight_std=0.12"
  "granitehybrid-moe-a|granitehybrid-moe|123|n_embd=256 n_layer=6 n_head=8 n_head_kv=2 n_ff=128 n_expert=16 n_expert_used=4 n_ff_shexp=256 mamba2_d_inner=512 mamba2_heads=16 mamba2_groups=2 mamba2_d_state=32 weight_std=0.075"
  # nemotron_h: one block per layer (layer_blocks: M Mamba2, * attention, - squared-ReLU
  # feed-forward); 7 layers ending on attention, 8 heads of 64 in one group, state 64, kernel 3;
  # 5 layers starting on attention, 6 heads of 32 in 3 groups, state 8, kernel 2.
  # nemotron_h_moe: 16 experts of 128, 4 chosen, a shared expert of 256, scale 1.5, two MoE
  # layers in a row; 6 experts of 96, 3 chosen, latent width 64, a shared expert of 64.
  "nemotron_h-a|nemotron_h|131|n_embd=256 n_layer=7 n_head=8 n_head_kv=2 head_dim=64 n_ff=512 layer_blocks=M-M*-M* mamba2_d_inner=512 mamba2_heads=8 mamba2_groups=1 mamba2_d_state=64 mamba2_conv_kernel=3 weight_std=0.075"
  "nemotron_h-b|nemotron_h|132|n_embd=96 n_layer=5 n_head=3 n_head_kv=1 head_dim=32 n_ff=160 layer_blocks=*M-M- mamba2_d_inner=192 mamba2_heads=6 mamba2_groups=3 mamba2_d_state=8 mamba2_conv_kernel=2 weight_std=0.12"
  "nemotron_h_moe-a|nemotron_h_moe|133|n_embd=256 n_layer=6 n_head=8 n_head_kv=2 head_dim=64 n_ff=128 layer_blocks=M-*M-- n_expert=16 n_expert_used=4 n_ff_exp=128 n_ff_shexp=256 moe_weights_scale=1.5 mamba2_d_inner=512 mamba2_heads=16 mamba2_groups=2 mamba2_d_state=32 weight_std=0.075"
  "nemotron_h_moe-b|nemotron_h_moe|134|n_embd=128 n_layer=5 n_head=4 n_head_kv=2 head_dim=32 n_ff=96 layer_blocks=M*-M- n_expert=6 n_expert_used=3 n_ff_exp=96 n_ff_shexp=64 moe_latent=64 mamba2_d_inner=256 mamba2_heads=8 mamba2_groups=2 mamba2_d_state=16 weight_std=0.106"
  # qwen3next: grouped value heads, 2 key heads serving 3 value heads each, attention every
  # second layer, 16 experts of 256 with 4 chosen, a shared expert of 256 (attn_qkv/attn_gate);
  # the older files' fused ssm_in: 1 key head serving 4 value heads, conv kernel 3, attention
  # every third layer, 4 experts of 64 with 2 chosen.
  "qwen3next-a|qwen3next|141|n_embd=256 n_layer=4 n_head=8 n_head_kv=2 head_dim=64 n_rot=16 ssm_state=32 ssm_groups=2 ssm_v_heads=6 full_attention_interval=2 n_expert=16 n_expert_used=4 n_ff_exp=256 n_ff_shexp=256 weight_std=0.075"
  "qwen3next-b|qwen3next-ssm_in|142|n_embd=96 n_layer=6 n_head=2 n_head_kv=1 head_dim=16 n_rot=4 ssm_state=16 ssm_groups=1 ssm_v_heads=4 ssm_conv_kernel=3 full_attention_interval=3 n_expert=4 n_expert_used=2 n_ff_exp=64 n_ff_shexp=32 weight_std=0.12"
  # falcon-h1: attention beside Mamba2 in every layer; 5 layers, 8 query heads of 32 over 2, 12
  # Mamba2 heads of 32 in one group (d_inner 384: 1.5 n_embd), state 32, kernel 4; 3 layers, 3
  # heads over 1, 6 Mamba2 heads of 32 in 3 groups, state 8, kernel 2, with the optional parts
  # a converted file may have (q/k/v and feed-forward biases) or lack (ssm_norm).
  "falcon-h1-a|falcon-h1|141|n_embd=256 n_layer=5 n_head=8 n_head_kv=2 head_dim=32 n_ff=512 mamba2_d_inner=384 mamba2_heads=12 mamba2_groups=1 mamba2_d_state=32 mamba2_conv_kernel=4 weight_std=0.075"
  "falcon-h1-b|falcon-h1|142|n_embd=96 n_layer=3 n_head=3 n_head_kv=1 head_dim=32 n_ff=160 mamba2_d_inner=192 mamba2_heads=6 mamba2_groups=3 mamba2_d_state=8 mamba2_conv_kernel=2 mamba2_norm=0 qkv_bias=1 ffn_bias=1 weight_std=0.12"
)

g++ -std=c++17 -O2 -o "$WORK/llama_dump" scripts/llama_dump.cpp -I"$LLAMA_DIR/include" \
  -I"$LLAMA_DIR/ggml/include" -L"$LLAMA_DIR/build/bin" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$LLAMA_DIR/build/bin" || exit 2

wanted() {
  [ -z "${ONLY:-}" ] && return 0
  local o
  for o in $ONLY; do [[ "$1" == "$o"* ]] && return 0; done
  return 1
}

FMT='%-12s %-14s %-9s %-9s %-9s %-7s %-6s %-17s %-9s %s\n'

le() { awk -v r="$1" -v b="$2" 'BEGIN { exit !(r <= b) }'; }
ge90() { [ $(($1 * 10)) -ge $(($2 * 9)) ]; }

fail_row() {  # CASE FILE WHY
  printf '%-12s %-14s MISS: %s\n' "$1" "$2" "$3" >> "$ROWS"
}

# dump MODEL TOKENS LOGITS [GREEDY]: llama.cpp's logits of every position (and the greedy
# continuation of the first N_PROMPT tokens when GREEDY is given).
dump() {
  local g=${4:-$D/none.json} n=$N_GREEDY
  [ $# -eq 4 ] || n=0
  nice -n 19 "$WORK/llama_dump" "$1" "$2" "$3" "$N_PROMPT" "$n" "$g" 2> "$D/dump.log"
}

# tova_logits MODEL TOKENS LOGITS BATCH [FLAGS...]
tova_logits() {
  local m=$1 t=$2 o=$3 b=$4
  shift 4
  nice -n 19 "$TOVA" logits -m "$m" -t 1 --tokens "$t" -o "$o" -b "$b" "$@" 2> "$D/tova.log"
}

# prompt_plus GREEDY.json OUT.json: the first N_PROMPT tokens, then the greedy ones.
prompt_plus() {
  echo "[$(tr -d '[] \n' < "$TOKENS" | cut -d, -f1-"$N_PROMPT"),$(tr -d '[] \n' < "$1")]" > "$2"
}

# check_f32 CASE FILE BOUND: tova on the F32 file against llama.cpp. One batch of 128 (rel L2,
# worst position, top-1), the same 128 one token at a time (the decode path: "vs deq" column
# holds its rel L2 here), and the greedy continuation fed one at a time.
check_f32() {
  local case=$1 f=$2 tol=$3 d="$WORK/$1/f32"
  mkdir -p "$d"
  dump "$f" "$TOKENS" "$d/cpp.128" "$d/greedy.json" ||
    { fail_row "$case" f32 "llama.cpp: $(tail -1 "$D/dump.log")"; return; }
  prompt_plus "$d/greedy.json" "$d/cont.json"
  tova_logits "$f" "$TOKENS" "$d/tova.128" 512 && tova_logits "$f" "$TOKENS" "$d/dec.128" 1 &&
    tova_logits "$f" "$d/cont.json" "$d/cont" 1 ||
    { fail_row "$case" f32 "tova: $(tail -1 "$D/tova.log")"; return; }
  local n_vocab=$(( $(stat -c %s "$d/cpp.128") / 4 / 128 ))
  local r
  r=($("$PYTHON" scripts/compare_logits.py "$n_vocab" "$d/tova.128" "$d/cpp.128" \
       "$d/dec.128" "$d/cpp.128" --greedy "$d/cont" "$d/greedy.json" "$N_PROMPT"))
  # r: batch (rel worst max agree n), decode (rel worst max agree n), greedy (agree n)
  local verdict=ok
  le "${r[1]}" "$tol" && le "${r[6]}" "$tol" && ge90 "${r[3]}" "${r[4]}" && ge90 "${r[8]}" "${r[9]}" &&
    ge90 "${r[10]}" "${r[11]}" || { verdict=MISS; }
  printf "$FMT" "$case" f32 "${r[0]}" "$(awk -v a="${r[1]}" -v b="${r[6]}" 'BEGIN { print (a > b ? a : b) }')" \
    "${r[2]}" "$((r[3] + r[8]))/$((r[4] + r[9]))" "${r[10]}/${r[11]}" "d:${r[5]}" - "$verdict" >> "$ROWS"
}

# check_file CASE LABEL FILE F32_BOUND: a quantized (or F16/BF16) file against llama.cpp on the
# same file (rel L2, worst position, top-1 over one batch of 128; greedy fed one at a time) and
# on the file dequantized to F32 (tova's default mode: "vs deq"; tova --f32-activations:
# "f32a/deq").
check_file() {
  local case=$1 label=$2 f=$3 tol=$4 d="$WORK/$1/$2"
  mkdir -p "$d"
  dump "$f" "$TOKENS" "$d/cpp.128" "$d/greedy.json" ||
    { fail_row "$case" "$label" "llama.cpp: $(tail -1 "$D/dump.log")"; return; }
  prompt_plus "$d/greedy.json" "$d/cont.json"
  nice -n 19 "$QUANTIZE" --allow-requantize "$f" "$d/deq.gguf" F32 > "$D/q.log" 2>&1 ||
    { fail_row "$case" "$label" "llama-quantize F32: $(tail -1 "$D/q.log")"; return; }
  dump "$d/deq.gguf" "$TOKENS" "$d/deq.128" "$d/deq.greedy.json" ||
    { fail_row "$case" "$label" "llama.cpp on the dequantized file: $(tail -1 "$D/dump.log")"; return; }
  rm -f "$d/deq.gguf"
  prompt_plus "$d/deq.greedy.json" "$d/deq.cont.json"
  tova_logits "$f" "$TOKENS" "$d/tova.128" 512 && tova_logits "$f" "$d/cont.json" "$d/cont" 1 &&
    tova_logits "$f" "$d/deq.cont.json" "$d/deq.cont" 1 &&
    tova_logits "$f" "$TOKENS" "$d/f32a.128" 512 --f32-activations ||
    { fail_row "$case" "$label" "tova: $(tail -1 "$D/tova.log")"; return; }
  local n_vocab=$(( $(stat -c %s "$d/cpp.128") / 4 / 128 ))
  local r
  r=($("$PYTHON" scripts/compare_logits.py "$n_vocab" "$d/tova.128" "$d/cpp.128" \
       "$d/tova.128" "$d/deq.128" "$d/f32a.128" "$d/deq.128" \
       --greedy "$d/cont" "$d/greedy.json" "$N_PROMPT" \
       --greedy "$d/deq.cont" "$d/deq.greedy.json" "$N_PROMPT" "$d/cpp.128" "$d/deq.128"))
  # r: quant (0-4), default vs deq (5-9), f32a vs deq (10-14), greedy vs llama.cpp on the file
  # (15-16), on the dequantized file (17-18), llama.cpp on the file vs on the dequantized file
  # (19-23: how far activation rounding alone moves this network)
  local verdict=ok
  { { le "${r[0]}" 3e-2 && ge90 "${r[3]}" "${r[4]}" && ge90 "${r[15]}" "${r[16]}"; } ||
    { le "${r[5]}" 3e-2 && ge90 "${r[8]}" "${r[9]}" && ge90 "${r[17]}" "${r[18]}"; }; } &&
    le "${r[10]}" "$tol" && ge90 "${r[13]}" "${r[14]}" || { verdict=MISS; }
  printf "$FMT" "$case" "$label" "${r[0]}" "${r[1]}" "${r[2]}" "${r[3]}/${r[4]}" "${r[15]}/${r[16]}" \
    "${r[5]} ${r[8]} ${r[17]}" "${r[10]}" "$verdict (cpp q/deq ${r[19]})" >> "$ROWS"
}

run_case() {
  local name family seed fields tol d sets s types tova_types t q
  IFS='|' read -r name family seed fields <<< "$1"
  tol=1e-3
  [ "$family" = gemma4 ] && tol=2e-3
  d="$WORK/$name"
  D=$d ROWS="$d/rows.txt"
  mkdir -p "$d"
  : > "$ROWS"
  sets=()
  set -f  # no pathname expansion: nemotron_h's layer_blocks holds '*'
  for s in $fields; do sets+=(--set "$s"); done
  set +f
  if ! nice -n 19 "$TOVA" make-random --arch "$family" "${sets[@]}" -s "$seed" --type f32 -t 1 \
      -o "$d/f32.gguf" 2> "$D/mk.log"; then
    fail_row "$name" f32 "make-random: $(tail -1 "$D/mk.log")"; return
  fi
  check_f32 "$name" "$d/f32.gguf" "$tol"
  types=$TYPES tova_types=$TOVA_TYPES
  [[ " $fields " == *" n_embd=256 "* ]] || { types=$NARROW_TYPES; tova_types=$NARROW_TOVA_TYPES; }
  # llama-quantize's mixes of the F32 file.
  for t in $types; do
    [ "$t" = MXFP4_MOE ] && [[ "$family" != gpt-oss && "$family" != *moe && "$family" != mixtral ]] && continue
    q="$d/lq-$t.gguf"
    if ! nice -n 19 "$QUANTIZE" "$d/f32.gguf" "$q" "$t" > "$D/q.log" 2>&1; then
      fail_row "$name" "lq:$t" "llama-quantize: $(tail -1 "$D/q.log")"; continue
    fi
    check_file "$name" "lq:$t" "$q" "$tol"
    rm -f "$q"
  done
  # tova's own writer, every type it writes.
  for t in $tova_types; do
    q="$d/tova-$t.gguf"
    if ! nice -n 19 "$TOVA" make-random --arch "$family" "${sets[@]}" -s "$seed" --type "$t" -t 1 \
        -o "$q" 2> "$D/mk.log"; then
      fail_row "$name" "tova:$t" "make-random: $(tail -1 "$D/mk.log")"; continue
    fi
    check_file "$name" "tova:$t" "$q" "$tol"
    rm -f "$q"
  done
}

# The cases run JOBS at a time (default 4), each niced: on a loaded machine a niced process
# waits for the processor far longer than it computes, so several at once finish sooner
# without taking time from anyone else.
pids=()
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ <<< "$c"
  wanted "$name" || continue
  while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-4}" ]; do sleep 1; done
  run_case "$c" &
done
wait
printf "$FMT" case file "rel L2" "worst pos" "max abs" top-1 greedy "deq: rel top1 gr" "f32a/deq" verdict
N_MISS=0
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ <<< "$c"
  wanted "$name" || continue
  cat "$WORK/$name/rows.txt"
  N_MISS=$((N_MISS + $(grep -c MISS "$WORK/$name/rows.txt")))
done
echo "held-back check: $N_MISS rows missed"
[ "$N_MISS" -eq 0 ]
