// The weights of a llama-family decoder: immutable views into the mapped GGUF file, checked
// against the architecture's shapes. Small vectors (norms, biases) are converted to float32.
// Optional parts are empty when the architecture has none; the forward pass applies what is
// there.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"
#include "kernels/matmul.h"
#include "model/config.h"
#include "model/layer_plan.h"
#include "model/tensor_loader.h"

namespace tova::model {

// A Gated DeltaNet mixer (qwen35, qwen35moe, qwen3next; layer_deltanet.cpp), shapes in
// DeltaNetConfig's terms (K = n_k_head * head_dim, V = n_v_head * head_dim, C = 2K + V,
// r = n_v_head / n_k_head, S = head_dim). The input projections come split (qkv, z, beta,
// alpha) or fused as qwen3next's files carry them (qkvz: older files, ba: all), each key head's
// rows together; the unused form's matrices are empty (n_out 0).
struct DeltaNetWeights {
  kernels::WeightMatrix qkv;    // attn_qkv: [C][n_embd], rows q (K), k (K), v (V)
  kernels::WeightMatrix z;      // attn_gate: [V][n_embd], the output gate
  kernels::WeightMatrix qkvz;   // ssm_in: [2K + 2V][n_embd], per key head q (S), k (S),
                                // v (r S), z (r S)
  kernels::WeightMatrix beta;   // ssm_beta: [n_v_head][n_embd]
  kernels::WeightMatrix alpha;  // ssm_alpha: [n_v_head][n_embd]
  kernels::WeightMatrix ba;     // ssm_ba: [2 n_v_head][n_embd], per key head beta (r), alpha (r)
  std::vector<float> conv;      // ssm_conv1d: [C][conv_kernel], oldest tap first
  std::vector<float> dt_bias;   // ssm_dt.bias: [n_v_head]
  std::vector<float> a;         // ssm_a: [n_v_head], -exp(A_log) as converted
  std::vector<float> norm;      // ssm_norm: [head_dim], the gated RMSNorm's weight
  kernels::WeightMatrix out;    // ssm_out: [n_embd][V]
};

// A gated short-convolution mixer (lfm2; layer_shortconv.cpp), E = n_embd, L = shortconv_l_cache.
struct ShortConvWeights {
  kernels::WeightMatrix in_proj;   // shortconv.in_proj: [3E][n_embd], rows B, C, x
  std::vector<float> conv;         // shortconv.conv: [E][L], oldest tap first
  kernels::WeightMatrix out_proj;  // shortconv.out_proj: [n_embd][E]
};

// A Mamba2 mixer (granitehybrid; layer_mamba2.cpp), shapes in Mamba2Config's terms
// (D = d_inner, G = n_group, N = d_state, H = n_head, CD = conv_dim = D + 2 G N).
struct Mamba2Weights {
  kernels::WeightMatrix in;     // ssm_in: [2D + 2GN + H][n_embd], rows z, x, B, C, dt
  std::vector<float> conv;      // ssm_conv1d: [CD][conv_kernel], oldest tap first
  std::vector<float> conv_b;    // ssm_conv1d.bias: [CD], or empty (a falcon-h1 file may lack it)
  std::vector<float> dt_bias;   // ssm_dt.bias: [H]
  std::vector<float> a;         // ssm_a: [H], -exp(A_log) as converted
  std::vector<float> d;         // ssm_d: [H], the skip x * D
  std::vector<float> norm;      // ssm_norm: [G][D / G], the gated RMSNorm's weight per group,
                                // or empty (a falcon-h1 file may lack it: the gated y as it is)
  kernels::WeightMatrix out;    // ssm_out: [n_embd][D]
};

// The feed-forward kind of a layer (layer_kinds.h), chosen by the architecture file: kNone for
// a layer without one (Nemotron-H's Mamba2 and attention layers), kReluSqr the ungated
// squared-ReLU feed-forward (Nemotron-H's MLP layers: w_up, w_down and their optional biases).
enum class FfnKind { kDense, kMoe, kNone, kReluSqr };

// A mixture-of-experts feed-forward (qwen3moe, qwen2moe, Mixtral): a router picks
// n_expert_used of n_expert SwiGLU experts per token; qwen2moe adds a shared expert scaled by
// a sigmoid gate. The experts are views of the file's 3-D tensors, one matrix per expert.
struct MoeWeights {
  kernels::WeightMatrix router;                 // ffn_gate_inp: [n_expert][n_embd]
  std::vector<float> router_b;                  // gpt-oss: ffn_gate_inp.bias [n_expert]
  // lfm2moe (MoeGating::kSigmoid): exp_probs_b.bias [n_expert], added to the sigmoids to choose
  // the experts, not to their weights.
  std::vector<float> select_bias;
  // [n_expert] x [n_ff_exp][n_embd] (n_embd: moe_latent where the layer has latent
  // projections); gate empty for ungated experts: relu(up · h)^2 (nemotron_h_moe)
  std::vector<kernels::WeightMatrix> gate, up;
  std::vector<kernels::WeightMatrix> down;      // [n_expert] x [n_embd][n_ff_exp]
  // gpt-oss: the experts' biases, added to each matrix's output; empty without.
  std::vector<float> gate_b, up_b;              // [n_expert][n_ff_exp]
  std::vector<float> down_b;                    // [n_expert][n_embd]
  // Shared expert (qwen2moe: gated by sigmoid(shared_gate_inp · x); granitehybrid: ungated),
  // empty without one.
  std::vector<float> shared_gate_inp;            // ffn_gate_inp_shexp: [n_embd]
  kernels::WeightMatrix shared_gate, shared_up;  // [n_ff_shexp][n_embd]
  kernels::WeightMatrix shared_down;             // [n_embd][n_ff_shexp]
  // granitehybrid: a shared expert added as it is, without a gate (shared_gate_inp empty);
  // nemotron_h_moe: without the gate's matrix too (shared_gate empty): relu(up · h)^2.
  bool shared_ungated = false;
  // nemotron_h_moe with ModelConfig::moe_latent > 0: the experts' input projection
  // ffn_latent_down [moe_latent][n_embd] and output projection ffn_latent_up
  // [n_embd][moe_latent]; empty (n_out 0) without.
  kernels::WeightMatrix latent_down, latent_up;
  bool has_shared() const { return !shared_gate_inp.empty() || shared_ungated; }
  // Gemma 4 (ModelConfig::moe_beside_dense): the router input's scale, ffn_gate_inp.scale
  // [n_embd], and each expert's output scale, ffn_down_exps.scale [n_expert]; empty without.
  std::vector<float> router_in_scale;
  std::vector<float> down_scale;
};

struct LayerWeights {
  MixerKind mixer_kind = MixerKind::kAttention;  // chosen by the family's loader (layer_plan.h)
  DeltaNetWeights deltanet;       // kDeltaNet
  ShortConvWeights shortconv;     // kShortConv
  Mamba2Weights mamba2;           // kMamba2, kAttnMamba2 (beside the attention's weights)
  std::vector<float> attn_norm;   // [n_embd]
  kernels::WeightMatrix wq;       // [n_head * head_dim][n_embd]; with q_gate [n_head][2][head_dim]
  // qwen35: wq's rows are per head a query then an output gate; the attention's output is
  // multiplied by sigmoid(gate) before wo.
  bool q_gate = false;
  kernels::WeightMatrix wk;       // [n_head_kv * head_dim][n_embd]
  kernels::WeightMatrix wv;       // [n_head_kv * head_dim][n_embd]
  kernels::WeightMatrix wo;       // [n_embd][n_head * head_dim]
  std::vector<float> bo;          // gpt-oss: attn_output.bias [n_embd]
  std::vector<float> attn_sinks;  // gpt-oss: [n_head] logits in each head's softmax denominator
  std::vector<float> bq, bk, bv;  // qwen2: [n_head * head_dim], [n_head_kv * head_dim] x2
  std::vector<float> q_norm;      // qwen3: [head_dim], RMSNorm of each query head before RoPE
  std::vector<float> k_norm;      // qwen3: [head_dim], RMSNorm of each key head before RoPE
  std::vector<float> attn_post_norm;  // gemma2/3: [n_embd], RMSNorm of the attention output
  // Gemma 4's global layers have no attn_v: the values are the key projection (before the key
  // norm), "K = V".
  bool v_is_k = false;
  std::vector<float> v_norm;      // gemma4: [head_dim] ones: values RMS-normalised unweighted
  float out_scale = 1.f;          // gemma4: layer_output_scale, the residual stream x this
  std::vector<float> ffn_norm;    // [n_embd]
  FfnKind ffn_kind = FfnKind::kDense;
  kernels::WeightMatrix w_gate;   // dense: [n_ff][n_embd]
  kernels::WeightMatrix w_up;     // dense: [n_ff][n_embd]
  kernels::WeightMatrix w_down;   // dense: [n_embd][n_ff]
  std::vector<float> ffn_gate_b;  // kDense (falcon-h1): ffn_gate.bias [n_ff], or empty; with
                                  // it ffn_up_b
  std::vector<float> ffn_up_b;    // kReluSqr, kDense: ffn_up.bias [n_ff], or empty
  std::vector<float> ffn_down_b;  // kReluSqr, kDense: ffn_down.bias [n_embd], or empty
  MoeWeights moe;                 // kMoe
  std::vector<float> ffn_post_norm;  // gemma2/3: [n_embd], RMSNorm of the feed-forward output
  // Gemma 4's MoE layers (ModelConfig::moe_beside_dense): the experts' input norm
  // (pre_ffw_norm_2), the dense feed-forward's output norm (post_ffw_norm_1) and the experts'
  // (post_ffw_norm_2), each [n_embd]; empty elsewhere.
  std::vector<float> ffn_pre_norm_2, ffn_post_norm_1, ffn_post_norm_2;
  // Gemma 4 E2B/E4B's per-layer input (ModelConfig::n_embd_per_layer > 0; empty without):
  kernels::WeightMatrix ple_gate;      // inp_gate: [n_embd_per_layer][n_embd]
  kernels::WeightMatrix ple_proj;      // proj: [n_embd][n_embd_per_layer]
  std::vector<float> ple_post_norm;    // post_norm: [n_embd]
};

// A multi-token prediction block (ModelConfig::n_nextn > 0; blk.{n_layer + i}., as llama.cpp's
// qwen35 loaders read it; nextn_block.cpp): a decoder layer of the family's attention kind
// whose input is eh_proj · [rms_norm(embed(token)) · enorm ; rms_norm(h) · hnorm], h the main
// model's last hidden state, and whose output goes through head_norm and head to logits of
// the token after next. Loaded and validated with the file; the main pass never runs it.
struct NextnWeights {
  LayerWeights layer;              // attn_norm, attention, post_attention_norm, feed-forward
  kernels::WeightMatrix eh_proj;   // nextn.eh_proj: [n_embd][2 n_embd], token half first
  std::vector<float> enorm;        // nextn.enorm: [n_embd], the token embedding's norm
  std::vector<float> hnorm;        // nextn.hnorm: [n_embd], the hidden state's norm
  // Optional in the file (Qwen3.5's converter writes shared_head_norm only); absent, the
  // main model's own is used (token_embd, output_norm, output): each points at what it uses.
  kernels::WeightMatrix embed;     // nextn.embed_tokens or token_embd: [n_vocab][n_embd]
  std::vector<float> head_norm;    // nextn.shared_head_norm or output_norm: [n_embd]
  kernels::WeightMatrix head;      // nextn.shared_head_head or output: [n_vocab][n_embd]
};

struct ModelWeights {
  kernels::WeightMatrix token_embd;  // [n_vocab][n_embd], rows are dequantized on lookup
  std::vector<float> output_norm;    // [n_embd]
  kernels::WeightMatrix output;      // [n_vocab][n_embd] (token_embd when tied)
  std::vector<float> rope_freqs;     // [n_rot/2] Llama-3.x frequency factors, or empty
  // Gemma 4 E2B/E4B's per-layer embeddings (ModelConfig::n_embd_per_layer = P > 0):
  kernels::WeightMatrix ple_token_embd;  // per_layer_token_embd: [n_vocab][n_layer * P]
  kernels::WeightMatrix ple_model_proj;  // per_layer_model_proj: [n_layer * P][n_embd]
  std::vector<float> ple_proj_norm;      // per_layer_proj_norm: [P]
  std::vector<LayerWeights> layers;
  std::vector<NextnWeights> nextn;        // [ModelConfig::n_nextn] prediction blocks
  uint64_t n_bytes = 0;                   // bytes of weight data the forward pass reads
  uint64_t n_bytes_nextn = 0;             // bytes of the prediction blocks' own tensors
  std::vector<std::string> tensors_read;  // every tensor of the file, sorted
};

// Prediction block i's tensors (nextn_block.cpp), after its decoder layer was loaded into
// n.layer by the family's load_layer; `w` holds the main model's token_embd, output_norm and
// output, which the block shares where the file has no tensors of its own.
Status load_nextn_block(TensorLoader& ld, const ModelConfig& c, int i, const ModelWeights& w,
                        NextnWeights& n);

// The prediction blocks' view of the main config: one layer, full attention of the model's
// shape, no per-layer arrays (window, NoPE, per-layer shapes, recurrent, shared K/V). An error
// names what a family would need the block to have that it cannot (per-layer inputs).
Result<ModelConfig> nextn_config(const ModelConfig& c);

// Fails with one error naming a tensor of the file that the architecture does not use.
Result<ModelWeights> load_weights(const io::GgufFile& file, const ModelConfig& c);

}  // namespace tova::model
