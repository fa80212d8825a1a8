// The kinds a layer is made of (docs/ARCHITECTURES.md, STYLE.md habit 19): a token mixer
// (attention, global or sliding-window) followed by a feed-forward block (dense or mixture of
// experts), each chosen per layer by the architecture file and computed by one file:
//   layer_attention.cpp  attention, with the multi-state's step (kv::step_layer)
//   layer_deltanet.cpp   Gated DeltaNet: causal conv1d + gated delta rule (a recurrent state)
//   layer_ffn_dense.cpp  the gated feed-forward of every dense family
//   layer_ffn_moe.cpp    routed experts (+ a shared expert)
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

}  // namespace tova::model
