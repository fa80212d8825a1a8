// Hyper-parameters of a decoder read from GGUF metadata ({arch}.*), validated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"
#include "kernels/ops.h"

namespace tova::model {

// The gated feed-forward's activation: act(gate) * up; kSwigluOai is gpt-oss's clamped SwiGLU
// (kernels::swiglu_oai_mul: alpha 1.702, limit 7, up + 1).
enum class FfnAct { kSilu, kGeluTanh, kSwigluOai };

// How a mixture's router turns logits into the chosen experts' weights.
enum class MoeGating {
  kSoftmax,          // softmax over all experts, then the top k (their probabilities)
  kSoftmaxOfChosen,  // the top k logits, then a softmax over those k (gpt-oss)
  kSigmoid,          // sigmoid of every logit; the top k of sigmoid + the layer's selection
                     // bias (MoeWeights::select_bias), weighted by their sigmoids (lfm2moe)
};

// Which key head a Gated DeltaNet value head reads, with r = n_v_head / n_k_head value heads per
// key head. The files store the value heads (v rows, z rows, beta, alpha, dt bias, A, the out
// projection's columns) in one of two orders:
//   kTiled    value head h reads key head h mod n_k_head (qwen35*: the converter reorders the
//             checkpoint's value heads to this order, so llama.cpp's op broadcasts q and k)
//   kGrouped  value head h reads key head h / r (qwen3next: the checkpoint's order, each key
//             head's r value heads together; llama.cpp repeats each q and k head r times)
enum class DeltaNetHeads { kTiled, kGrouped };

// Gated DeltaNet layers (qwen35, qwen35moe, qwen3next: the {arch}.ssm.* keys, as llama.cpp
// names them).
struct DeltaNetConfig {
  int conv_kernel = 0;  // ssm.conv_kernel: taps of the causal conv1d over q, k and v
  int n_k_head = 0;     // ssm.group_count: query/key heads
  int n_v_head = 0;     // ssm.time_step_rank: value heads (a multiple of n_k_head)
  int head_dim = 0;     // ssm.state_size: a head's key and value size (ssm.inner_size =
                        // n_v_head * head_dim)
  DeltaNetHeads heads = DeltaNetHeads::kTiled;  // the family's, not a key
  int key_dim() const { return n_k_head * head_dim; }
  int value_dim() const { return n_v_head * head_dim; }
  int conv_dim() const { return 2 * key_dim() + value_dim(); }
  int k_head(int h) const {
    return heads == DeltaNetHeads::kTiled ? h % n_k_head : h / (n_v_head / n_k_head);
  }
};

// Mamba2 (SSD) layers (granitehybrid; the {arch}.ssm.* keys as llama.cpp reads them for
// Mamba-2): the in projection's rows are z [d_inner], x [d_inner], B [n_group][d_state],
// C [n_group][d_state], dt [n_head]; x, B and C go through the causal conv1d.
struct Mamba2Config {
  int conv_kernel = 0;  // ssm.conv_kernel: taps of the causal conv1d (d_conv)
  int d_inner = 0;      // ssm.inner_size: x's and z's width, n_head * head_dim
  int d_state = 0;      // ssm.state_size: N, a head's state columns (B's and C's per group)
  int n_head = 0;       // ssm.time_step_rank: heads, one dt, A and D each
  int n_group = 0;      // ssm.group_count: groups of heads sharing B and C (and the norm's groups)
  int head_dim() const { return n_head > 0 ? d_inner / n_head : 0; }
  int conv_dim() const { return d_inner + 2 * n_group * d_state; }
  int in_proj_dim() const { return 2 * d_inner + 2 * n_group * d_state + n_head; }
};

struct ModelConfig {
  std::string arch_name;  // general.architecture
  std::string name;       // general.name, if any
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;  // the widest layer's, where feed_forward_length is a per-layer array
  // Per layer its feed-forward width where the file gives feed_forward_length as an array
  // (Gemma 4 E2B's double-wide MLP of the shared-K/V layers; Nemotron-H's 0 at every layer
  // without a feed-forward); empty when every layer has n_ff.
  std::vector<int> layer_n_ff;
  int n_ff_of(int il) const { return layer_n_ff.empty() ? n_ff : layer_n_ff[il]; }
  float rms_eps = 1e-5f;
  kernels::RopeParams rope;
  bool tied_output = false;  // no output.weight: the token embedding is reused
  FfnAct ffn_act = FfnAct::kSilu;
  // kSwigluOai's clamp of gate (above) and up (both sides); gpt-oss's files carry no key for
  // it (llama.cpp fixes 7 too). A field so that tests can lift it (MoeGptOss).
  float swiglu_limit = kernels::kSwigluOaiLimit;
  float embd_scale = 1.f;     // token embeddings are multiplied by it (Gemma: sqrt(n_embd))
  float attn_scale = 0.f;     // attention scores' scale; 0: 1/sqrt(head_dim)
  float attn_softcap = 0.f;   // > 0: scores become cap * tanh(score / cap) (Gemma 2)
  float final_softcap = 0.f;  // > 0: logits become cap * tanh(logit / cap) (Gemma 2)
  // Granite's multipliers: every block's output is multiplied by residual_scale before it is
  // added to the residual stream (add_residual), and the logits are divided by logit_scale.
  float residual_scale = 1.f;
  float logit_scale = 1.f;
  // Sliding-window attention: per layer, how many positions a query sees, its own included (0:
  // all); empty when no layer has a window. Window layers rotate with rope_window.
  std::vector<int> layer_window;
  kernels::RopeParams rope_window;
  // Layers whose queries and keys are not rotated at all (NoPE; SmolLM3's every fourth layer):
  // per layer 1 for such a layer; empty when every layer is rotated. Their keys carry no
  // position, so a position mode (gap, rank) changes nothing there.
  std::vector<uint8_t> layer_nope;
  // Layers of their own attention shape (Gemma 4: window layers with more KV heads of a smaller
  // head size than the global ones): per layer its KV heads and head size; empty when every
  // layer has n_head_kv and head_dim (which are then the largest).
  std::vector<int> layer_n_head_kv;
  std::vector<int> layer_head_dim;
  // Gemma 4: every value head RMS-normalised (without a weight) before attention.
  bool v_norm = false;
  // Mixture of experts ({arch}.expert_count > 0; families with ArchSpec::experts): every
  // layer's feed-forward routes each token to n_expert_used of n_expert experts.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;                  // an expert's feed-forward width
  int n_ff_shexp = 0;                // the shared expert's (qwen2moe), 0: none
  // nemotron_h_moe's moe_latent_size: the experts read and write this width, between the
  // layer's ffn_latent_down and ffn_latent_up projections (MoeWeights::latent_*); 0: n_embd.
  int moe_latent = 0;
  bool expert_weights_norm = false;  // chosen experts' weights divided by their sum
  float expert_weights_scale = 1.f;  // and then multiplied by this
  MoeGating moe_gating = MoeGating::kSoftmax;
  // The first n_layer_dense_lead layers have a dense feed-forward, the rest experts
  // (leading_dense_block_count: lfm2moe).
  int n_layer_dense_lead = 0;
  // Gemma 4 26B-A4B: an MoE layer keeps its dense feed-forward beside the experts, each with
  // its own norms (LayerWeights::ffn_pre_norm_2, ffn_post_norm_1/2), the router reads
  // rms_norm(x) / sqrt(n_embd) * ffn_gate_inp.scale, experts are GELU-gated and each expert's
  // output is scaled by ffn_down_exps.scale (layer_ffn_moe.cpp).
  bool moe_beside_dense = false;
  // Recurrent (Gated DeltaNet) layers: per layer, whether it is one; empty when none is. The
  // others attend, and only they hold K/V (MultiStateOptions::recurrent).
  std::vector<bool> layer_recurrent;
  DeltaNetConfig deltanet;
  // Gated short-convolution layers (lfm2: shortconv.l_cache): the conv's kernel size L; each
  // such layer keeps the last L - 1 inputs (layer_shortconv.cpp). 0: none.
  int shortconv_l_cache = 0;
  // Mamba2 layers (granitehybrid; layer_mamba2.cpp); all 0: none.
  Mamba2Config mamba2;
  bool recurrent(int il) const {
    return il < static_cast<int>(layer_recurrent.size()) && layer_recurrent[il];
  }
  // Layers whose only block is a feed-forward, without a token mixer (Nemotron-H's MLP layers):
  // per layer, whether it is one; empty when none is. They hold nothing in the multi-state.
  std::vector<bool> layer_ffn_only;
  bool ffn_only(int il) const {
    return il < static_cast<int>(layer_ffn_only.size()) && layer_ffn_only[il];
  }
  int n_ffn_only_layers() const {
    int n = 0;
    for (bool f : layer_ffn_only) n += f ? 1 : 0;
    return n;
  }
  // Multi-token prediction blocks (qwen35*: {arch}.nextn_predict_layers, as llama.cpp reads
  // it): extra decoder blocks stored past the main stack (blk.{n_layer} ...), loaded and
  // validated (ModelWeights::nextn) but not run by the main forward pass. block_count counts
  // them; n_layer does not.
  int n_nextn = 0;
  // Layers that reuse an earlier layer's K/V (Gemma 4 E2B/E4B: the last
  // attention.shared_kv_layers layers): per layer the model layer whose K/V it attends over
  // (the last earlier layer of its kind that computes K/V), or -1 for a layer with its own;
  // empty when no layer shares. A shared layer holds nothing in the multi-state.
  std::vector<int> layer_kv_owner;
  bool shared_kv(int il) const { return !layer_kv_owner.empty() && layer_kv_owner[il] >= 0; }
  // Layer il's K/V is read by a later shared layer: its policy evicts only once they attended.
  bool kv_shared_later(int il) const {
    for (int o : layer_kv_owner) {
      if (o == il) return true;
    }
    return false;
  }
  // Layers that attend and run Mamba2 side by side on the same normed input, their outputs
  // summed (Falcon-H1: every layer; MixerKind::kAttnMamba2): per layer, whether it is one;
  // empty when none is. Such a layer holds K/V (it counts among the attention layers) and a
  // recurrent state (it counts among n_recurrent_states), and is not in layer_recurrent.
  std::vector<bool> layer_parallel;
  bool parallel(int il) const {
    return il < static_cast<int>(layer_parallel.size()) && layer_parallel[il];
  }
  int n_recurrent_layers() const {
    int n = 0;
    for (bool r : layer_recurrent) n += r ? 1 : 0;
    return n;
  }
  // The multi-state's recurrent states: one per recurrent layer and one per parallel layer.
  int n_recurrent_states() const {
    int n = n_recurrent_layers();
    for (bool p : layer_parallel) n += p ? 1 : 0;
    return n;
  }
  int n_shared_kv_layers() const {
    int n = 0;
    for (int o : layer_kv_owner) n += o >= 0 ? 1 : 0;
    return n;
  }
  // Layers that hold K/V in the multi-state: n_layer minus the recurrent, shared and
  // feed-forward-only ones (a parallel layer holds K/V).
  int n_attention_layers() const {
    return n_layer - n_recurrent_layers() - n_shared_kv_layers() - n_ffn_only_layers();
  }
  // Per-layer embeddings (Gemma 4 E2B/E4B; embedding_length_per_layer_input > 0): every layer
  // adds a gated projection of its own n_embd_per_layer-wide input, made from the token's row
  // of per_layer_token_embd and a projection of its embedding (layer_per_layer_input.cpp).
  int n_embd_per_layer = 0;
  // The "{arch}." metadata keys the loader read (every such key of the file), sorted.
  std::vector<std::string> keys_read;
};

// The architectures tova implements, for error messages: "llama, qwen2, ..." (the registry's).
std::string supported_architectures();

Result<ModelConfig> load_config(const io::GgufFile& file);

}  // namespace tova::model
