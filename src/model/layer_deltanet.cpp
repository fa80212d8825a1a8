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
// The prompt form is the same recurrence token by token (llama.cpp's CPU backend runs the
// fused op, not its chunked graph, for prompts): a prompt fed at once and token by token give
// the same state and outputs. Each sequence's state is its multi-state's recurrent(ir); the
// value heads of all sequences run in parallel, the tokens of one head in order.
#include <algorithm>
#include <cmath>

#include "kernels/delta_rule.h"
#include "kernels/ops.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

}  // namespace

void deltanet_block(const LayerPass& p, int ir, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  const DeltaNetConfig& d = c.deltanet;
  const DeltaNetWeights& W = L.deltanet;
  ForwardScratch& s = p.s;
  ForwardScratch::DeltaNet& b = s.deltanet;
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

  // The conv1d runs through each sequence's tokens in order (its state carries them), in place.
  pool.for_each_dynamic(static_cast<int64_t>(s.runs.size()), [&](int64_t r, int) {
    const SequenceRun& run = s.runs[r];
    kv::RecurrentState& st = run.state->recurrent(ir);
    for (const int i : run.idx) {
      float* row = &b.qkv[i * C];
      kernels::causal_conv1d_step(st.conv(), W.conv.data(), row, C, d.conv_kernel - 1, row);
    }
  });
  for_tokens(pool, n, 4 * C, [&](int64_t i) {
    float* row = &b.qkv[i * C];
    for (int64_t e = 0; e < C; ++e) row[e] = row[e] * sigmoid(row[e]);  // silu
    for (int64_t h = 0; h < d.n_k_head; ++h) {
      kernels::l2_norm(row + h * S, S, c.rms_eps);      // q
      kernels::l2_norm(row + K + h * S, S, c.rms_eps);  // k
    }
  });

  // The delta rule: (sequence, value head) pairs in parallel, each through its tokens in order.
  const float scale = 1.f / std::sqrt(static_cast<float>(S));
  const int64_t n_runs = static_cast<int64_t>(s.runs.size());
  pool.for_each_dynamic(n_runs * H, [&](int64_t job, int) {
    const SequenceRun& run = s.runs[job / H];
    const int64_t h = job % H, kh = h % d.n_k_head;
    float* m = run.state->recurrent(ir).delta() + h * S * S;
    for (const int i : run.idx) {
      const float* row = &b.qkv[i * C];
      kernels::gated_delta_rule(m, row + kh * S, row + K + kh * S, row + 2 * K + h * S,
                                std::exp(b.g[i * H + h]), b.beta[i * H + h], scale, S,
                                &b.o[i * V + h * S]);
    }
  });

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

  // Followers ride their leader while their states are equal: they end with its state.
  for (const SequenceRun& run : s.runs) {
    for (kv::MultiState* f : run.followers) {
      f->recurrent(ir).copy_from(run.state->recurrent(ir));
    }
  }
}

}  // namespace tova::model
