// The kinds a layer is made of (docs/ARCHITECTURES.md, STYLE.md habit 19): a token mixer
// (attention, global or sliding-window) followed by a feed-forward block (dense or mixture of
// experts), each chosen per layer by the architecture file and computed by one file:
//   layer_attention.cpp  attention, with the multi-state's step (kv::step_layer)
//   layer_attention_shared.cpp  attention over an earlier layer's K/V (holds no state)
//   layer_deltanet.cpp   Gated DeltaNet: causal conv1d + gated delta rule (a recurrent state)
//   layer_ffn_dense.cpp  the gated feed-forward of every dense family
//   layer_ffn_moe.cpp    routed experts (+ a shared expert)
//   layer_per_layer_input.cpp  Gemma 4 E2B/E4B's per-layer input, after the feed-forward
// Each block reads the residual stream s.x, adds its output to it, and uses the scratch
// buffers of ForwardScratch that its file names; Model::forward only wires them.
#pragma once

#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_f32act.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "model/model.h"
#include "model/weights.h"

namespace tova::model {

// What every block of one forward call shares: the batch's n tokens, their scratch, the pool.
struct LayerPass {
  const ModelConfig& c;
  ForwardScratch& s;
  ThreadPool& pool;
  int64_t n = 0;                 // tokens in the batch
  bool f32_activations = false;  // ModelOptions::f32_activations

  void matmul(const kernels::WeightMatrix& w, const float* x, int64_t n_tok, float* y) const {
    if (f32_activations) {
      kernels::matmul_f32_activations(w, x, n_tok, y, pool);
    } else {
      kernels::matmul(w, x, n_tok, y, pool);
    }
  }
  // Several matrices over the same activations (kernels::matmul_multi).
  void matmul_multi(std::span<const kernels::WeightMatrix* const> ws, const float* x, int64_t n_tok,
                    std::span<float* const> ys) const {
    if (f32_activations) {
      for (size_t i = 0; i < ws.size(); ++i) matmul(*ws[i], x, n_tok, ys[i]);
    } else {
      kernels::matmul_multi(ws, x, n_tok, ys, pool);
    }
  }
};

// Mixer: s.x += attn_post_norm(wo · attention(norm(s.x))) for the model's layer il (its own
// head count and size where the family gives layers their own), whose K/V is the multi-state's
// layer `ia` (the attention layers' index: recurrent layers hold none), every sequence of the
// batch stepping its multi-state (layer_attention.cpp). `rope`: the layer's rotation.
void attention_block(const LayerPass& p, int il, int ia, const LayerWeights& L,
                     const kernels::RopeParams& rope);

// Mixer: s.x += attn_post_norm(wo · attention(q(norm(s.x)))) for a layer that computes no K/V
// (MixerKind::kSharedKv): its queries attend over the K/V of the multi-state's layer
// `ia_owner` (ModelConfig::layer_kv_owner), as that layer held it for each token of the step
// (layer_attention_shared.cpp). `rope`: the layer's rotation (its owner's).
void shared_kv_block(const LayerPass& p, int il, int ia_owner, const LayerWeights& L,
                     const kernels::RopeParams& rope);

// For the shared kind: s.att [n][n_head * head_dim] = attention of the batch's queries s.q
// (before RoPE; rotated here where the pool keeps rotated keys) over each sequence's
// multi-state layer ia, every token of the step joined and nothing evicted yet
// (layer_attention.cpp, which owns the attention arithmetic).
void attend_over_owner(const LayerPass& p, int ia, int n_head_kv, int head_dim,
                       const kernels::RopeParams& rope);

// Mixer: s.x += ssm_out · gated_norm(delta_rule(conv1d(qkv · norm(s.x)))) for a Gated DeltaNet
// layer whose state is the multi-state's recurrent(ir) (layer_deltanet.cpp); each sequence's
// tokens run in order through its state, and followers end with their leader's state.
void deltanet_block(const LayerPass& p, int ir, const LayerWeights& L);

// Dense feed-forward: s.x += ffn_post_norm(down(act(gate · h) * (up · h))), h = norm(s.x)
// (layer_ffn_dense.cpp).
void dense_ffn_block(const LayerPass& p, const LayerWeights& L);

// Mixture of experts: s.x += sum over the k chosen experts of weight_e · expert_e(h), plus
// the gated shared expert where the layer has one, h = norm(s.x) (layer_ffn_moe.cpp).
void moe_ffn_block(const LayerPass& p, const LayerWeights& L);

// Per-layer embeddings (Gemma 4 E2B/E4B, layer_per_layer_input.cpp):
// per_layer_inputs: s.ple [n][n_layer][P] = (rms_norm(per_layer_model_proj · s.x / sqrt(n_embd))
//   + per_layer_token_embd[token] * sqrt(P)) / sqrt(2), from the scaled token embeddings s.x.
void per_layer_inputs(const LayerPass& p, const ModelWeights& w, std::span<const int32_t> tokens);
// After layer il's feed-forward: s.x += post_norm(proj · (gelu(inp_gate · s.x) * s.ple[il])).
void per_layer_input_block(const LayerPass& p, int il, const LayerWeights& L);

}  // namespace tova::model
