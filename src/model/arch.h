// What one architecture file (arch_<name>.cpp) provides: how to read the family's own metadata
// keys and tensors. The forward pass is shared and driven by what was loaded (a layer with q/k
// norm weights applies them, a config with rope frequency factors uses them), so adding a family
// means adding one file here and one line in arch_registry.cpp, not threading a flag through the
// forward pass; its test fixtures are one file and one line beside (fixture/family_<name>.cpp,
// fixture/fixture_registry.cpp), outside the inference path. Keys and tensors each
// family reads: docs/ARCHITECTURES.md.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/config.h"
#include "model/key_reader.h"
#include "model/tensor_loader.h"
#include "model/weights.h"

namespace tova::model {

struct ArchSpec {
  const char* name;  // general.architecture
  // Reads an optional "rope_freqs.weight" (per-frequency RoPE divisors: Llama-3.x's llama3
  // scaling as the converter writes it).
  bool rope_freqs = false;
  // Reads {arch}.expert_count / expert_used_count (a mixture of experts; load_config checks
  // them): families without it refuse an expert count > 0.
  bool experts = false;
  // Accepts rope.scaling.type yarn (read_rope_scaling).
  bool yarn = false;
  // Reads attention.head_count_kv as a per-layer array where the file has one (Gemma 4):
  // ModelConfig::layer_n_head_kv, n_head_kv the largest entry.
  bool layer_kv_heads = false;
  // Reads attention.head_count_kv as a per-layer array in which 0 marks a layer without
  // attention, a layer of the family's recurrent kind (LFM2's short convolutions):
  // ModelConfig::layer_recurrent; the other entries must agree (n_head_kv).
  bool kv_heads_mark_recurrent = false;
  // Reads feed_forward_length and attention.head_count_kv as per-layer arrays in which 0 marks
  // a layer without that block, each layer being one block (Nemotron-H): both 0 a recurrent
  // layer (ModelConfig::layer_recurrent), a feed-forward width a feed-forward-only layer
  // (layer_ffn_only, layer_n_ff), else an attention-only layer; n_ff and n_head_kv are the
  // nonzero entries' (the attention layers' must agree).
  bool layer_blocks = false;
  // The final norm's tensor (LFM2's converter names it token_embd_norm).
  const char* output_norm = "output_norm.weight";
  // Reads the family's keys beyond the common ones (load_config reads embedding_length,
  // block_count, feed_forward_length, head counts, key/value length, context_length, rms
  // epsilon, rope base, dimension count and linear scaling) and sets the family's fields of c.
  Status (*configure)(KeyReader& keys, ModelConfig& c);
  // Reads layer il's tensors (the names are "blk.{il}." + ...). Its inverse, the family's
  // fixture writer, lives apart (fixture/family_<name>.cpp, fixture/write_*.cpp).
  Status (*load_layer)(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
};

// The architectures (arch_registry.cpp: the one list), and one by name (nullptr if unknown).
std::span<const ArchSpec* const> all_archs();
const ArchSpec* find_arch(std::string_view name);

// Tensors most families share, for the architecture files.
// attn_norm, attn_q/k/v/output, ffn_norm, ffn_gate/up/down: llama's layer.
Status load_llama_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
// Its attention part (the mixer) and its feed-forward part (the dense FFN kind).
Status load_attention(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
// `norm`: the name of the feed-forward's norm tensor (qwen35*: post_attention_norm).
Status load_dense_ffn(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l,
                      const char* norm = "ffn_norm");
// ffn_norm, the router ffn_gate_inp [n_embd, n_expert] and the experts ffn_{gate,up}_exps
// [n_embd, n_ff_exp, n_expert], ffn_down_exps [n_ff_exp, n_embd, n_expert] (the MoE FFN
// kind); with shared_expert also ffn_gate_inp_shexp [n_embd] and ffn_{gate,up,down}_shexp.
Status load_moe_ffn(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l,
                    bool shared_expert, const char* norm = "ffn_norm");
// How a family reads a mixture's keys (read_expert_keys).
struct ExpertKeys {
  bool required = false;       // the family is a mixture: expert_count must be > 0
  bool norm = false;           // renormalize the chosen weights unless expert_weights_norm says
  bool shared_expert = false;  // reads expert_shared_feed_forward_length (default n_ff)
  bool ff_exp_key = false;     // reads expert_feed_forward_length (default n_ff /
                               // n_expert_used, as llama.cpp); else experts are n_ff wide
  bool sigmoid_gating = false;  // expert_gating_func 2 (sigmoid) is accepted (lfm2moe)
};
// The expert keys of a mixture, after load_config read expert_count/expert_used_count:
// those of `k`, expert_weights_norm, expert_weights_scale (default 1) and expert_gating_func
// (softmax only). Nothing for a file without experts (unless k.required: an error).
Status read_expert_keys(KeyReader& keys, ModelConfig& c, const ExpertKeys& k);
// attn_q/k/v.bias.
Status load_qkv_bias(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
// attn_q_norm/attn_k_norm.weight [head_dim]: per-head RMSNorm of queries and keys (qwen3, gemma3).
Status load_qk_norm(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);

// Gated DeltaNet families (qwen35, qwen35moe, qwen3next; deltanet_loader.cpp): the ssm.* keys,
// the layer pattern (attention.recurrent_layers, else full_attention_interval) into
// c.layer_recurrent and nextn_predict_layers (ModelConfig::n_nextn: multi-token prediction
// blocks past the main stack).
Status read_deltanet_layers(KeyReader& keys, ModelConfig& c);
// qwen35*: read_deltanet_layers and rope.dimension_sections (interleaved M-RoPE on text).
Status read_deltanet_keys(KeyReader& keys, ModelConfig& c);
// A Gated DeltaNet layer's mixer: attn_norm, attn_qkv, attn_gate, ssm_conv1d, ssm_dt.bias,
// ssm_a, ssm_beta, ssm_alpha, ssm_norm, ssm_out; with grouped value heads (qwen3next) the fused
// ssm_ba instead of ssm_beta/ssm_alpha, and ssm_in or attn_qkv + attn_gate.
Status load_deltanet(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
// Layer il's mixer as the pattern says: load_deltanet, or gated attention (attn_q with per-head
// gates, attn_k/v/output, q/k norms); a layer whose tensors are of the other kind is refused
// in one line naming the pattern key.
Status load_qwen35_mixer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);

// Mamba2 families (granitehybrid, nemotron_h, falcon-h1; mamba2_loader.cpp): the ssm.* keys
// (conv_kernel, inner_size, state_size, time_step_rank, group_count; all required) into
// c.mamba2, checked against each other; and a Mamba2 layer's mixer: ssm_in, ssm_conv1d (+ bias),
// ssm_dt.bias, ssm_a, ssm_d, ssm_norm, ssm_out, checked against them (not its attn_norm); with
// optional_bias_norm the conv bias and ssm_norm only where the file has them (falcon-h1).
Status read_mamba2_keys(KeyReader& keys, ModelConfig& c);
Status load_mamba2(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l,
                   bool optional_bias_norm = false);

// LFM2 families (lfm2, lfm2moe; arch_lfm2.cpp): shortconv.l_cache (2..64), no sliding window,
// NEOX RoPE; layer il's mixer as attention.head_count_kv's pattern says (a gated short
// convolution or attention with q/k norms; a layer whose tensors are of the other kind is
// refused in one line naming the key).
Status read_lfm2_keys(KeyReader& keys, ModelConfig& c);
Status load_lfm2_mixer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);

// The rope scaling keys: none or linear, and yarn where the family allows it (its factor,
// original_context_length and attn_factor); another type is an error. c.n_ctx_train is set.
Status read_rope_scaling(KeyReader& keys, ModelConfig& c, bool yarn);

}  // namespace tova::model
