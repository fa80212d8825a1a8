// The Gated DeltaNet mixer kind (layer_kinds.h), as llama.cpp computes qwen35's and
// qwen35moe's linear-attention layers (its build_layer_attn_linear with the fused
// gated_delta_net op, which its CPU backend uses for prompts and decoding alike). With
// K = n_k_head x S, V = n_v_head x S (S = head_dim), for each token of a sequence in order:
//   h      = rms_norm(x) · attn_norm
//   qkv    = attn_qkv · h            [2K + V], then the causal conv1d over the last
//                                    conv_kernel tokens (its state: the last conv_kernel - 1
//                                    inputs), then silu
//   q, k   = l2_norm per key head of qkv[0, K) and qkv[K, 2K) (eps: the rms epsilon); v the rest
//   beta   = sigmoid(ssm_beta · h)                               [n_v_head]
//   g      = softplus(ssm_alpha · h + ssm_dt.bias) · ssm_a        [n_v_head] (ssm_a < 0: decay)
//   o_h    = gated delta rule of value head h with key head h mod n_k_head (kernels/
//            delta_rule.h: state S_h decays by exp(g_h), moves toward v by beta_h, read by q)
//   o_h    = rms_norm(o_h) · ssm_norm · silu(z_h),  z = attn_gate · h
//   x     += ssm_out · o
// A sequence with several tokens in the batch (a prompt) runs the delta rule in its chunked
// form (kernels/delta_rule.h: blocked matrix products over chunks of 64 tokens), a single token
// (decoding) the recurrent form; both compute the same states and outputs up to float rounding
// (llama.cpp's CPU backend runs its fused recurrent op for both, and its goldens hold either).
// Each sequence's state is its multi-state's recurrent(ir). Threads: the conv1d over blocks of
// channels, the delta rule over (sequence, value head) pairs, the projections inside the matmul
// kernels over the whole batch; the buffers are ForwardScratch's, grown once, never per token.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/delta_rule.h"
#include "kernels/ops.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// The kind's buffers; C, K, V as in DeltaNetWeights, H = n_v_head.
struct DeltaNetScratch : KindScratch {
  std::vector<float> qkv;      // [n_tok][C] projections, then their conv1d + silu
  std::vector<float> z;        // [n_tok][V] output gates
  std::vector<float> beta;     // [n_tok][H] projections, then sigmoid
  std::vector<float> g;        // [n_tok][H] projections, then the log decay
  std::vector<float> o;        // [n_tok][V] the delta rule's outputs, then gated-normed
  std::vector<float> scratch;  // [pool threads][delta_chunk_workspace_floats(S)] chunked rule
};

// Per sequence and layer: the conv1d's last conv_kernel - 1 inputs of each of its C channels
// and a delta-rule matrix per value head.
kv::RecurrentShape state_shape(const ModelConfig& c) {
  const DeltaNetConfig& d = c.deltanet;
  return {.conv_channels = d.conv_dim(),
          .conv_taps = d.conv_kernel - 1,
          .n_head = d.n_v_head,
          .head_dim = d.head_dim};
}

// The delta rule: (sequence, value head) pairs in parallel, each through its tokens in order:
// the chunked form from kChunkedFrom tokens (below it, copying the state in and out of the
// chunk's workspace costs about what the blocking saves), else token by token. Reads b.qkv (the
// normed q, k and v), b.g and b.beta; writes b.o.
void delta_rule_runs(const LayerPass& p, int ir, const DeltaNetConfig& d, DeltaNetScratch& b) {
  ForwardScratch& s = p.s;
  ThreadPool& pool = p.pool;
  const int64_t S = d.head_dim, H = d.n_v_head;
  const int64_t K = d.key_dim(), V = d.value_dim(), C = d.conv_dim();
  constexpr int64_t kChunkedFrom = 4;
  const int64_t n_runs = static_cast<int64_t>(s.runs.size());
  const float scale = 1.f / std::sqrt(static_cast<float>(S));
  const int64_t work_floats = kernels::delta_chunk_workspace_floats(S);
  bool any_chunked = false;
  for (const SequenceRun& run : s.runs) {
    any_chunked |= static_cast<int64_t>(run.idx.size()) >= kChunkedFrom;
  }
  if (any_chunked) resize(b.scratch, pool.size() * work_floats);
  pool.for_each_dynamic(n_runs * H, [&](int64_t job, int thread) {
    const SequenceRun& run = s.runs[job / H];
    const int64_t h = job % H, kh = h % d.n_k_head;
    float* m = run.state->recurrent(ir).delta() + h * S * S;
    const int64_t n_tok = static_cast<int64_t>(run.idx.size());
    if (n_tok >= kChunkedFrom) {
      const kernels::DeltaRuleRun r{.rows = run.idx.data(),
                                    .n_tok = n_tok,
                                    .q = b.qkv.data() + kh * S,
                                    .k = b.qkv.data() + K + kh * S,
                                    .v = b.qkv.data() + 2 * K + h * S,
                                    .qkv_stride = C,
                                    .g = b.g.data() + h,
                                    .beta = b.beta.data() + h,
                                    .gate_stride = H,
                                    .out = b.o.data() + h * S,
                                    .out_stride = V};
      kernels::gated_delta_rule_chunked(m, r, scale, S, &b.scratch[thread * work_floats]);
      return;
    }
    for (const int i : run.idx) {
      const float* row = &b.qkv[i * C];
      kernels::gated_delta_rule(m, row + kh * S, row + K + kh * S, row + 2 * K + h * S,
                                std::exp(b.g[i * H + h]), b.beta[i * H + h], scale, S,
                                &b.o[i * V + h * S]);
    }
  });

}

}  // namespace

void deltanet_block(const LayerPass& p, int /*il*/, const LayerPlan& lp, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  const DeltaNetConfig& d = c.deltanet;
  const DeltaNetWeights& W = L.deltanet;
  ForwardScratch& s = p.s;
  DeltaNetScratch& b = s.own<DeltaNetScratch>();
  const int ir = lp.state;
  ThreadPool& pool = p.pool;
  const int64_t n = p.n, n_embd = c.n_embd, S = d.head_dim, H = d.n_v_head;
  const int64_t K = d.key_dim(), V = d.value_dim(), C = d.conv_dim();
  resize(s.xb, n * n_embd);
  resize(b.qkv, n * C);
  resize(b.z, n * V);
  resize(b.beta, n * H);
  resize(b.g, n * H);
  resize(b.o, n * V);

  for_tokens(pool, n, n_embd, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * n_embd], L.attn_norm.data(), &s.xb[i * n_embd], n_embd, c.rms_eps);
  });
  const kernels::WeightMatrix* ws[] = {&W.qkv, &W.z, &W.beta, &W.alpha};
  float* ys[] = {b.qkv.data(), b.z.data(), b.beta.data(), b.g.data()};
  p.matmul_multi(ws, s.xb.data(), n, ys);
  for_tokens(pool, n, 4 * H, [&](int64_t i) {
    for (int64_t h = 0; h < H; ++h) {
      b.beta[i * H + h] = sigmoid(b.beta[i * H + h]);
      const float a = b.g[i * H + h] + W.dt_bias[h];
      b.g[i * H + h] = kernels::softplus(a) * W.a[h];
    }
  });

  // The conv1d + silu, each sequence through its state (recurrent_conv.cpp).
  causal_conv_runs(p, ir, W.conv.data(), b.qkv.data(), C, C, d.conv_kernel - 1, /*silu=*/true);
  for_tokens(pool, n, 2 * K, [&](int64_t i) {
    float* row = &b.qkv[i * C];
    for (int64_t h = 0; h < d.n_k_head; ++h) {
      kernels::l2_norm(row + h * S, S, c.rms_eps);      // q
      kernels::l2_norm(row + K + h * S, S, c.rms_eps);  // k
    }
  });

  delta_rule_runs(p, ir, d, b);

  // Gated RMSNorm per value head into z (silu(z) · norm(o)), then the output projection.
  for_tokens(pool, n, 4 * V, [&](int64_t i) {
    for (int64_t h = 0; h < H; ++h) {
      float* o = &b.o[i * V + h * S];
      kernels::rms_norm(o, W.norm.data(), o, S, c.rms_eps);
      kernels::silu_mul(&b.z[i * V + h * S], o, S);
    }
  });
  p.matmul(W.out, b.z.data(), n, s.xb.data());
  for_tokens(pool, n, n_embd,
             [&](int64_t i) { kernels::add(&s.x[i * n_embd], &s.xb[i * n_embd], n_embd); });
  followers_take_recurrent(p, ir);
}

extern const MixerSpec kMixerDeltaNet{.kind = MixerKind::kDeltaNet,
                                      .name = "deltanet",
                                      .holds = MixerState::kRecurrent,
                                      .recurrent_shape = state_shape,
                                      .block = deltanet_block};

}  // namespace tova::model
