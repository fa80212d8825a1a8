// The Mamba2 (SSD) mixer kind (layer_kinds.h), as llama.cpp computes Granite 4.0-H's Mamba2
// layers (src/models/mamba-base.cpp, build_mamba2_layer, with the CPU backend's ssm_conv and
// ssm_scan). With D = d_inner, G = n_group, N = d_state, H = n_head, P = D / H, heads in G
// contiguous groups of H / G, for each token of a sequence in order:
//   h            = rms_norm(x) · attn_norm
//   z|x|B|C|dt   = ssm_in · h                           [D | D | G N | G N | H]
//   x|B|C        = silu(causal conv1d of x|B|C over the last conv_kernel tokens + conv bias)
//                  (its state: the last conv_kernel - 1 inputs, kv/recurrent_state.h's conv)
//   dt_h         = softplus(dt_h + ssm_dt.bias_h)
//   y_h          = selective scan of head h (kernels/ssm_scan.h: its state [P][N] decays by
//                  exp(dt_h A_h), A = ssm_a = -exp(A_log), takes B_g x_h dt_h, is read by C_g,
//                  g the head's group) + x_h * ssm_d_h
//   y            = rms_norm per group of D / G of (y * silu(z)) · ssm_norm
//   x           += ssm_out · y                          (times residual_scale where the family
//                                                        has one: LayerPass::add_residual)
// Prompts run the scan's recurrent form token by token per head (the head's state held in L1
// through the run), as llama.cpp's CPU backend does. The chunked (SSD matrix) form
// (kernels::ssm_scan_chunked) computes the same, but at Granite 4.0-H's heads (P = 64, N = 128)
// it does about as many multiply-adds per token as the recurrent form (L N + L P / 2 + 2 P N
// against 3 P N with chunks of L = 64) and took 1.75x the recurrent form's CPU time in
// bench_mamba2's scan_head64x128 rows (one thread, 2026-12-07, a loaded shared machine:
// indicative only): prompts do not take it until a benchmark window says otherwise. Each
// sequence's state is its multi-state's recurrent(lp.state). Threads: the conv over blocks of channels, the scan over
// (sequence, head) pairs, the projections inside the matmul kernels over the whole batch; the
// buffers are the kind's own (Mamba2Scratch), grown once, never per token.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/delta_rule.h"
#include "kernels/ops.h"
#include "kernels/ssm_scan.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

struct Mamba2Scratch : KindScratch {
  std::vector<float> zxbcdt;  // [n_tok][2D + 2GN + H] in_proj's rows; x|B|C become the conv's
                              // output, dt softplus(dt + bias), z silu(z) * y
  std::vector<float> y;       // [n_tok][D] the scan's outputs, then the gated norm's
};

// Per sequence and layer: the conv's last conv_kernel - 1 inputs of its D + 2GN channels and a
// [P][N] state per head.
kv::RecurrentShape state_shape(const ModelConfig& c) {
  const Mamba2Config& m = c.mamba2;
  return {.conv_channels = m.conv_dim(),
          .conv_taps = m.conv_kernel - 1,
          .n_head = m.n_head,
          .head_dim = m.head_dim(),
          .state_cols = m.d_state};
}

float silu(float v) { return v / (1.f + std::exp(-v)); }

// out [n][n_embd] = ssm_out · y for the normed rows h (h may be out: read before out is
// written), each sequence through its state, followers ending with their leader's.
void mamba2_mix(const LayerPass& p, int /*il*/, const LayerPlan& lp, const LayerWeights& L,
                const float* h, float* out) {
  const ModelConfig& c = p.c;
  const Mamba2Config& m = c.mamba2;
  const Mamba2Weights& W = L.mamba2;
  ForwardScratch& s = p.s;
  Mamba2Scratch& b = s.own<Mamba2Scratch>();
  ThreadPool& pool = p.pool;
  // A Mamba2 layer's state index, or the recurrent one of a parallel layer (layer_parallel.cpp).
  const int ir = lp.holds == MixerState::kKvAndRecurrent ? lp.recurrent : lp.state;
  const int64_t n = p.n, D = m.d_inner, G = m.n_group, N = m.d_state, H = m.n_head,
                P = m.head_dim(), CD = m.conv_dim(), IP = m.in_proj_dim();
  const int64_t heads_per_group = H / G, group_width = D / G;
  // Offsets in a row of zxbcdt.
  const int64_t o_x = D, o_b = 2 * D, o_c = 2 * D + G * N, o_dt = 2 * D + 2 * G * N;
  resize(b.zxbcdt, n * IP);
  resize(b.y, n * D);
  p.matmul(W.in, h, n, b.zxbcdt.data());

  // The conv over x|B|C, each sequence through its state (recurrent_conv.cpp), then its bias
  // (where the layer has one: Falcon-H1's converter writes it where mamba_conv_bias) and silu;
  // the steps through softplus.
  causal_conv_runs(p, ir, W.conv.data(), b.zxbcdt.data() + o_x, IP, CD, m.conv_kernel - 1,
                   /*silu=*/false);
  for_tokens(pool, n, CD, [&](int64_t i) {
    float* row = &b.zxbcdt[i * IP];
    if (W.conv_b.empty()) {
      for (int64_t e = 0; e < CD; ++e) row[o_x + e] = silu(row[o_x + e]);
    } else {
      for (int64_t e = 0; e < CD; ++e) row[o_x + e] = silu(row[o_x + e] + W.conv_b[e]);
    }
    for (int64_t j = 0; j < H; ++j) row[o_dt + j] = kernels::softplus(row[o_dt + j] + W.dt_bias[j]);
  });

  // The scan: (sequence, head) pairs in parallel, each through its tokens in order.
  const int64_t n_runs = static_cast<int64_t>(s.runs.size());
  pool.for_each_dynamic(n_runs * H, [&](int64_t job, int) {
    const SequenceRun& run = s.runs[job / H];
    const int64_t hd = job % H, g = hd / heads_per_group;
    float* state = run.state->recurrent(ir).delta() + hd * P * N;
    const kernels::SsmScanRun r{.rows = run.idx.data(),
                                .n_tok = static_cast<int64_t>(run.idx.size()),
                                .x = b.zxbcdt.data() + o_x + hd * P,
                                .x_stride = IP,
                                .b = b.zxbcdt.data() + o_b + g * N,
                                .c = b.zxbcdt.data() + o_c + g * N,
                                .bc_stride = IP,
                                .dt = b.zxbcdt.data() + o_dt + hd,
                                .dt_stride = IP,
                                .y = b.y.data() + hd * P,
                                .y_stride = D};
    kernels::ssm_scan(state, r, W.a[hd], P, N);
  });

  // The skip, the gate and the norm per group: y = rms_norm_g((y + x D) * silu(z)) · ssm_norm;
  // without ssm_norm (Falcon-H1's converter writes it where mamba_rms_norm) the gated y as it is.
  for_tokens(pool, n, 4 * D, [&](int64_t i) {
    float* row = &b.zxbcdt[i * IP];
    float* y = &b.y[i * D];
    for (int64_t hh = 0; hh < H; ++hh) {
      for (int64_t e = hh * P; e < (hh + 1) * P; ++e) y[e] += row[o_x + e] * W.d[hh];
    }
    kernels::silu_mul(row, y, D);  // z <- silu(z) * y
    if (W.norm.empty()) {
      std::copy_n(row, D, y);
      return;
    }
    for (int64_t g = 0; g < G; ++g) {
      kernels::rms_norm(row + g * group_width, W.norm.data() + g * group_width, y + g * group_width,
                        group_width, c.rms_eps);
    }
  });
  p.matmul(W.out, b.y.data(), n, out);
  followers_take_recurrent(p, ir);
}

void mamba2_block(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L) {
  const int64_t E = p.c.n_embd;
  ForwardScratch& s = p.s;
  resize(s.xb, p.n * E);
  for_tokens(p.pool, p.n, E, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * E], L.attn_norm.data(), &s.xb[i * E], E, p.c.rms_eps);
  });
  mamba2_mix(p, il, lp, L, s.xb.data(), s.xb.data());
  for_tokens(p.pool, p.n, E, [&](int64_t i) { p.add_residual(&s.x[i * E], &s.xb[i * E]); });
}

}  // namespace

extern const MixerSpec kMixerMamba2{.kind = MixerKind::kMamba2,
                                    .name = "mamba2",
                                    .holds = MixerState::kRecurrent,
                                    .recurrent_shape = state_shape,
                                    .block = mamba2_block,
                                    .mix = mamba2_mix};

}  // namespace tova::model
