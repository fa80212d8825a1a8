// The kinds a layer is made of (docs/ARCHITECTURES.md, STYLE.md habit 19): a token mixer
// followed by a feed-forward block (dense or mixture of experts), each chosen per layer by the
// architecture file and computed by one file:
//   layer_attention.cpp  attention, with the multi-state's step (kv::step_layer)
//   layer_attention_shared.cpp  attention over an earlier layer's K/V (holds no state)
//   layer_deltanet.cpp   Gated DeltaNet: causal conv1d + gated delta rule (a recurrent state)
//   layer_shortconv.cpp  gated short convolution: B, C, x; C * conv(B * x) (a recurrent state)
//   layer_mamba2.cpp     Mamba2 (SSD): conv1d + selective scan + gated group norm (a recurrent
//                        state)
//   layer_mixer_none.cpp no mixer: a layer that is only a feed-forward (holds no state)
//   layer_parallel.cpp   parallel mixers: attention and Mamba2 side by side on one normed
//                        input, outputs summed (Falcon-H1; K/V and a recurrent state)
//   layer_ffn_dense.cpp  the gated feed-forward of every dense family
//   layer_ffn_relu2.cpp  the ungated squared-ReLU feed-forward (Nemotron-H)
//   layer_ffn_moe.cpp    routed experts (+ a shared expert)
//   layer_per_layer_input.cpp  Gemma 4 E2B/E4B's per-layer input, after the feed-forward
// A mixer kind's file defines its MixerSpec (what it keeps in the multi-state, its recurrent
// state's shape, its block), listed once in mixer_registry.cpp; the layer plan (layer_plan.h)
// says which kind each layer is and where its state lives. Each block reads the residual
// stream s.x, adds its output to it, and keeps its own buffers in its file (KindScratch) or
// uses ForwardScratch's shared ones; Model::forward only wires them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_f32act.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "kv/recurrent_state.h"
#include "model/forward_scratch.h"
#include "model/layer_plan.h"
#include "model/weights.h"

namespace tova::model {

// What every block of one forward call shares: the batch's n tokens, their scratch, the pool.
struct LayerPass {
  const ModelConfig& c;
  ForwardScratch& s;
  ThreadPool& pool;
  int64_t n = 0;                 // tokens in the batch
  bool f32_activations = false;  // ModelOptions::f32_activations
  // The model's rotation, with its frequency factors (rope_freqs.weight) where it has them.
  kernels::RopeParams rope{};

  // Layer il's rotation: none on a NoPE layer (layer_nope), rope_window on a window layer, else
  // the model's.
  kernels::RopeParams rope_of(int il) const {
    if (!c.layer_nope.empty() && c.layer_nope[il] != 0) return kernels::RopeParams{.n_rot = 0};
    if (!c.layer_window.empty() && c.layer_window[il] > 0) return c.rope_window;
    return rope;
  }

  // x += out [n_embd] for one token, a block's output joining the residual stream; out is
  // first multiplied by the family's residual_scale where it has one (Granite), as llama.cpp
  // scales the block's output before the add.
  void add_residual(float* x, float* out) const {
    if (c.residual_scale != 1.f) kernels::scale(out, c.residual_scale, c.n_embd);
    kernels::add(x, out, c.n_embd);
  }

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

// A token mixer kind: what it keeps in the multi-state and its block, defined by its file.
struct MixerSpec {
  MixerKind kind;
  const char* name;  // as docs and errors name it: "attention", "deltanet", ...
  MixerState holds;
  // kRecurrent kinds: the state one sequence keeps for one layer of the kind.
  kv::RecurrentShape (*recurrent_shape)(const ModelConfig& c) = nullptr;
  // s.x += mixer(s.x) for layer il, its state where lp says.
  void (*block)(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L) = nullptr;
  // Kinds that can run beside another on the same input (parallel mixers, layer_parallel.cpp):
  // out [n][n_embd] = the mixer's output for the normed rows h [n][n_embd] (before the residual
  // add; h is read whole before out is written, so they may be one buffer), its state where lp
  // says. nullptr for the kinds no parallel layer pairs yet.
  void (*mix)(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L,
              const float* h, float* out) = nullptr;
};

// The mixer kinds (mixer_registry.cpp: the one list) and one by its enum value.
std::span<const MixerSpec* const> all_mixers();
const MixerSpec& mixer_spec(MixerKind kind);

// The layer plan of a loaded model: each layer's kind as its loader chose it
// (LayerWeights::mixer_kind), its state index among the multi-state's K/V layers or recurrent
// states, its owner for a shared-K/V layer; an error where the kinds disagree with the config's
// layer pattern (ModelConfig::layer_recurrent, layer_kv_owner, layer_ffn_only), which sizes the
// multi-state.
Result<std::vector<LayerPlan>> plan_layers(const ModelConfig& c, const ModelWeights& w);

// Mixer (attention): s.x += attn_post_norm(wo · attention(norm(s.x))) for the model's layer il
// (its own head count and size where the family gives layers their own), whose K/V is the
// multi-state's layer lp.state, every sequence of the batch stepping its multi-state
// (layer_attention.cpp), rotated by p.rope_of(il).
void attention_block(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L);

// Mixer (shared K/V): s.x += attn_post_norm(wo · attention(q(norm(s.x)))) for a layer that
// computes no K/V: its queries attend over the K/V of the multi-state's layer lp.state (its
// owner's, ModelConfig::layer_kv_owner), as that layer held it for each token of the step
// (layer_attention_shared.cpp), rotated as its owner.
void shared_kv_block(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L);

// For the shared kind: s.attn.att [n][n_head * head_dim] = attention of the batch's queries
// s.attn.q (before RoPE; rotated here where the pool keeps rotated keys) over each sequence's
// multi-state layer ia, every token of the step joined and nothing evicted yet
// (layer_attention.cpp, which owns the attention arithmetic).
void attend_over_owner(const LayerPass& p, int ia, int n_head_kv, int head_dim,
                       const kernels::RopeParams& rope);

// What the recurrent kinds share (recurrent_conv.cpp): the causal conv1d of every sequence of
// the batch through the conv part of its multi-state's recurrent(ir), in place on x (row i of
// token i, stride x_stride; weights w [channels][taps + 1]), then silu where `silu`; and
// followers taking their leader's recurrent(ir) at the layer's end.
void causal_conv_runs(const LayerPass& p, int ir, const float* w, float* x, int64_t x_stride,
                      int64_t channels, int taps, bool silu);
void followers_take_recurrent(const LayerPass& p, int ir);

// Mixer (Gated DeltaNet): s.x += ssm_out · gated_norm(delta_rule(conv1d(qkv · norm(s.x)))) for
// a layer whose state is the multi-state's recurrent(lp.state) (layer_deltanet.cpp); each
// sequence's tokens run in order through its state, and followers end with their leader's.
void deltanet_block(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L);

// Dense feed-forward: s.x += ffn_post_norm(down(act(gate · h) * (up · h))), h = norm(s.x)
// (layer_ffn_dense.cpp).
void dense_ffn_block(const LayerPass& p, const LayerWeights& L);

// Squared-ReLU feed-forward (Nemotron-H's MLP layers): s.x += down · relu(up · h + up_b)^2
// + down_b, h = norm(s.x), the biases where the layer has them (layer_ffn_relu2.cpp).
void relu2_ffn_block(const LayerPass& p, const LayerWeights& L);

// Mixture of experts: s.x += sum over the k chosen experts of weight_e · expert_e(h), plus
// the gated shared expert where the layer has one, h = norm(s.x) (layer_ffn_moe.cpp).
void moe_ffn_block(const LayerPass& p, const LayerWeights& L);

// Per-layer embeddings (Gemma 4 E2B/E4B, layer_per_layer_input.cpp):
// per_layer_inputs: ple [n][n_layer][P] = (rms_norm(per_layer_model_proj · s.x / sqrt(n_embd))
//   + per_layer_token_embd[token] * sqrt(P)) / sqrt(2), from the scaled token embeddings s.x.
void per_layer_inputs(const LayerPass& p, const ModelWeights& w, std::span<const int32_t> tokens);
// After layer il's feed-forward: s.x += post_norm(proj · (gelu(inp_gate · s.x) * ple[il])).
void per_layer_input_block(const LayerPass& p, int il, const LayerWeights& L);

}  // namespace tova::model
