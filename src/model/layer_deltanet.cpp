// The Gated DeltaNet mixer kind (layer_kinds.h), as llama.cpp computes qwen35's, qwen35moe's
// and qwen3next's linear-attention layers (its build_layer_attn_linear with the fused
// gated_delta_net op, which its CPU backend uses for prompts and decoding alike). With
// K = n_k_head x S, V = n_v_head x S (S = head_dim), for each token of a sequence in order:
//   h      = rms_norm(x) · attn_norm
//   qkv    = attn_qkv · h            [2K + V] (qwen3next's older files: gathered from the
//                                    fused ssm_in · h, see DeltaNetWeights), then the causal
//                                    conv1d over the last
//                                    conv_kernel tokens (its state: the last conv_kernel - 1
//                                    inputs), then silu
//   q, k   = l2_norm per key head of qkv[0, K) and qkv[K, 2K) (eps: the rms epsilon); v the rest
//   beta   = sigmoid(ssm_beta · h)                               [n_v_head]
//   g      = softplus(ssm_alpha · h + ssm_dt.bias) · ssm_a        [n_v_head] (ssm_a < 0: decay)
//            (qwen3next: beta and alpha gathered from the fused ssm_ba · h)
//   o_h    = gated delta rule of value head h with key head DeltaNetConfig::k_head(h): h mod
//            n_k_head (qwen35*) or h / (n_v_head / n_k_head) (qwen3next) (kernels/
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
  std::vector<float> qkv;       // [n_tok][C] projections, then their conv1d + silu
  std::vector<float> z;         // [n_tok][V] output gates
  std::vector<float> beta;      // [n_tok][H] projections, then sigmoid
  std::vector<float> g;         // [n_tok][H] projections, then the log decay
  std::vector<float> o;         // [n_tok][V] the delta rule's outputs, then gated-normed
  std::vector<float> scratch;   // [pool threads][delta_chunk_workspace_floats(S)] chunked rule
  std::vector<float> fused_in;  // [n_tok][C + V] ssm_in's projections (per key head q k v z)
  std::vector<float> fused_ba;  // [n_tok][2H] ssm_ba's projections (per key head beta alpha)
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
    const int64_t h = job % H, kh = d.k_head(static_cast<int>(h));
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

// The input projections of the n tokens' normed inputs h [n][n_embd]: b.qkv, b.z, b.beta and
// b.g (alpha), each row in the split matrices' order. Fused matrices (qwen3next) are computed
// into their own rows and gathered: per key head kh, ssm_in's q, k, v (r S), z (r S) and
// ssm_ba's beta (r), alpha (r); its value heads kh r .. kh r + r - 1 in that order.
void project(const LayerPass& p, const DeltaNetConfig& d, const DeltaNetWeights& W, const float* h,
             DeltaNetScratch& b) {
  const int64_t n = p.n, S = d.head_dim, H = d.n_v_head, r = d.n_v_head / d.n_k_head;
  const int64_t K = d.key_dim(), V = d.value_dim(), C = d.conv_dim();
  const bool fused_in = W.qkvz.n_out > 0, fused_ba = W.ba.n_out > 0;
  std::vector<const kernels::WeightMatrix*> ws;
  std::vector<float*> ys;
  if (fused_in) {
    resize(b.fused_in, n * (C + V));
    ws.push_back(&W.qkvz);
    ys.push_back(b.fused_in.data());
  } else {
    ws.insert(ws.end(), {&W.qkv, &W.z});
    ys.insert(ys.end(), {b.qkv.data(), b.z.data()});
  }
  if (fused_ba) {
    resize(b.fused_ba, n * 2 * H);
    ws.push_back(&W.ba);
    ys.push_back(b.fused_ba.data());
  } else {
    ws.insert(ws.end(), {&W.beta, &W.alpha});
    ys.insert(ys.end(), {b.beta.data(), b.g.data()});
  }
  p.matmul_multi(ws, h, n, ys);
  if (!fused_in && !fused_ba) return;
  for_tokens(p.pool, n, C + V, [&](int64_t i) {
    for (int64_t kh = 0; kh < d.n_k_head && fused_in; ++kh) {
      const float* src = &b.fused_in[i * (C + V) + kh * (2 * S + 2 * r * S)];
      float* qkv = &b.qkv[i * C];
      std::copy_n(src, S, qkv + kh * S);
      std::copy_n(src + S, S, qkv + K + kh * S);
      std::copy_n(src + 2 * S, r * S, qkv + 2 * K + kh * r * S);
      std::copy_n(src + 2 * S + r * S, r * S, &b.z[i * V + kh * r * S]);
    }
    for (int64_t kh = 0; kh < d.n_k_head && fused_ba; ++kh) {
      const float* src = &b.fused_ba[i * 2 * H + kh * 2 * r];
      std::copy_n(src, r, &b.beta[i * H + kh * r]);
      std::copy_n(src + r, r, &b.g[i * H + kh * r]);
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
  project(p, d, W, s.xb.data(), b);
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
