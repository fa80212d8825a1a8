// The mixture-of-experts feed-forward kind (layer_kinds.h), as qwen3moe, qwen2moe, Mixtral and
// gpt-oss compute it (llama.cpp's build_moe_ffn):
//   h = rms_norm(x) · ffn_norm
//   l = router · h [+ router bias (gpt-oss)]
//   MoeGating::kSoftmax (qwen*moe, Mixtral):
//     p = softmax(l) over the n_expert experts; E = the n_expert_used most probable
//     (ties: the lower index); w_e = p_e, / max(sum of the chosen p, 2^-14) when the family or
//     file renormalizes
//   MoeGating::kSoftmaxOfChosen (gpt-oss): E = the n_expert_used largest logits; w = softmax
//     of their logits
//   w_e ×= expert_weights_scale
//   MoeGating::kSigmoid (lfm2moe, nemotron_h_moe): p = sigmoid(l); E = the n_expert_used
//     largest p + selection bias; w_e = p_e (renormalized where the file says)
//   out = sum over e in E, best first, of w_e · (down_e(act(gate_e · h + bg_e, up_e · h + bu_e))
//         + bd_e)    (biases: gpt-oss; act: silu(g) * u, or gpt-oss's clamped swiglu_oai;
//                    nemotron_h_moe's experts have no gate: relu(up_e · h)^2)
//       + sigmoid(shared_gate_inp · h) · shared expert(h)   (qwen2moe; ungated: granitehybrid,
//                    nemotron_h_moe's without a gate matrix, relu(up · h)^2 projected down)
//   x += out
// nemotron_h_moe's latent experts (ModelConfig::moe_latent > 0): the experts read
// latent_down · h and their weighted sum goes through latent_up before the shared expert's
// output joins it; the router and the shared expert read h itself.
// Gemma 4 keeps its dense feed-forward beside the experts, with other norms and a scaled router
// input (moe_beside_dense_block below).
// Speed: an expert's weights are read once per call whatever the number of its tokens. The
// (token, expert) pairs are grouped by expert (in decode: the one token's chosen experts), and
// the chosen experts' gate and up products, then their down products, each run as one task
// list over (expert, rows) (kernels::matmul_grouped): a GEMM per expert over its tokens, only
// the chosen experts' rows read, all of them split over the threads in one pass, so both
// threads stay busy however unevenly the tokens fall on the experts, and a decode step pays
// two dispatches per layer rather than one per expert.
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "kernels/ops.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

// The kind's buffers; n_pick = n_tok * n_expert_used, one row per (token, chosen expert), rows
// grouped by expert.
struct MoeScratch : KindScratch {
  std::vector<float> probs;       // [n_tok][n_expert] router logits, then probabilities
  std::vector<int> chosen;        // [n_tok][n_expert_used] expert ids, most probable first
  std::vector<float> weight;      // [n_tok][n_expert_used] their weights
  std::vector<int> begin;         // [n_expert + 1] each expert's first row
  std::vector<int> next;          // [n_expert] its next free row while grouping
  std::vector<int> row_of;        // [n_tok][n_expert_used] the row of (token, j)
  std::vector<int> token_of;      // [n_pick] the token of each row
  // d_exp below: the experts' width, n_embd or ModelConfig::moe_latent.
  std::vector<float> xe;          // [n_pick][d_exp] inputs gathered by expert
  std::vector<float> gate, up;    // [n_pick][n_ff_exp] expert gate and up projections
  std::vector<float> ye;          // [n_pick][d_exp] expert outputs
  std::vector<kernels::MatmulJob> jobs;  // the experts' products of one step (run_experts)
  std::vector<float> shared_gate;        // [n_tok] sigmoid gate of the shared expert
  std::vector<float> shared_h;    // [n_tok][n_ff_shexp] shared expert's gate projection
  std::vector<float> shared_h2;   // [n_tok][max(n_ff_shexp, n_embd)] its up projection, then
                                  // its output
  // Gemma 4 (ModelConfig::moe_beside_dense): the router's input and the dense
  // feed-forward's output beside the experts, each [n_tok][n_embd].
  std::vector<float> router_in, dense_out;
  // nemotron_h_moe's latent experts: their input [n_tok][moe_latent], the weighted sum of their
  // outputs [n_tok][moe_latent] and its projection back [n_tok][n_embd].
  std::vector<float> latent, latent_sum, latent_y;
};

// ggml's clamp of the weights' sum (the smallest normal float16), kept for equal results.
constexpr float kMinWeightSum = 6.103515625e-5f;

// Token i's router logits (in place: probabilities under kSoftmax and kSigmoid) -> its chosen
// experts and their weights; select_bias (kSigmoid, may be null) moves the choice only.
void route(float* probs, const ModelConfig& c, const float* select_bias, int* chosen,
           float* weight) {
  const int n_expert = c.n_expert, k = c.n_expert_used;
  if (c.moe_gating == MoeGating::kSoftmax) kernels::softmax(probs, n_expert);
  if (c.moe_gating == MoeGating::kSigmoid) {
    for (int e = 0; e < n_expert; ++e) probs[e] = 1.f / (1.f + std::exp(-probs[e]));
  }
  auto score = [&](int e) { return select_bias ? probs[e] + select_bias[e] : probs[e]; };
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int e = 0; e < n_expert; ++e) {
      bool taken = false;
      for (int u = 0; u < j; ++u) taken |= chosen[u] == e;
      if (!taken && (best < 0 || score(e) > score(best))) best = e;
    }
    chosen[j] = best;
    weight[j] = probs[best];
  }
  if (c.moe_gating == MoeGating::kSoftmaxOfChosen) kernels::softmax(weight, k);
  if (c.expert_weights_norm) {
    float sum = 0.f;
    for (int j = 0; j < k; ++j) sum += weight[j];
    sum = std::max(sum, kMinWeightSum);
    for (int j = 0; j < k; ++j) weight[j] /= sum;
  }
  if (c.expert_weights_scale != 1.f) {
    for (int j = 0; j < k; ++j) weight[j] *= c.expert_weights_scale;
  }
}

// rows [b, b + cnt) of y [.][width] += bias[e] ([n_expert][width]), if the layer has biases.
void add_expert_bias(const LayerPass& p, const std::vector<float>& bias, int e, int b, int cnt,
                     int64_t width, float* y) {
  if (bias.empty() || cnt == 0) return;
  const float* be = &bias[static_cast<size_t>(e) * width];
  for_tokens(p.pool, cnt, width, [&](int64_t r) { kernels::add(y + (b + r) * width, be, width); });
}

// Rows of the (token, chosen expert) pairs grouped by expert: m.begin[e] .. m.begin[e + 1] are
// expert e's rows, in token order; m.row_of[i * k + j] is the row of token i's j-th choice.
void group_by_expert(const ModelConfig& c, int64_t n, MoeScratch& m) {
  const int k = c.n_expert_used;
  m.begin.assign(c.n_expert + 1, 0);
  for (int64_t r = 0; r < n * k; ++r) ++m.begin[m.chosen[r] + 1];
  for (int e = 0; e < c.n_expert; ++e) m.begin[e + 1] += m.begin[e];
  m.next.assign(m.begin.begin(), m.begin.end() - 1);
  for (int64_t r = 0; r < n * k; ++r) m.row_of[r] = m.next[m.chosen[r]]++;
  m.token_of.resize(n * k);
  for (int64_t r = 0; r < n * k; ++r) m.token_of[m.row_of[r]] = static_cast<int>(r / k);
}

// The products of a list of jobs: one task list over the threads (kernels::matmul_grouped),
// or one float-activation matmul per job.
void matmul_jobs(const LayerPass& p, std::span<const kernels::MatmulJob> jobs) {
  if (!p.f32_activations) return kernels::matmul_grouped(jobs, p.pool);
  for (const kernels::MatmulJob& j : jobs) {
    if (j.n_tok > 0) p.matmul(*j.w, j.x, j.n_tok, j.y);
  }
}

// The experts' width: the model's, or the latent one they read and write (nemotron_h_moe).
int64_t expert_width(const ModelConfig& c) { return c.moe_latent > 0 ? c.moe_latent : c.n_embd; }

// The routed experts' outputs, m.ye [n_pick][d_exp], from their inputs xin [n][d_exp] (the
// normed inputs s.xb, or their latent projection).
void run_experts(const LayerPass& p, const MoeWeights& W, const float* xin) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  MoeScratch& m = s.own<MoeScratch>();
  const int64_t d = expert_width(c), f = c.n_ff_exp, n_pick = p.n * c.n_expert_used;
  const bool gated = !W.gate.empty();
  // The experts with tokens, each over its rows m.begin[e] .. m.begin[e + 1] (in decode the one
  // token's input itself; in a prompt its tokens' inputs gathered into m.xe).
  std::vector<kernels::MatmulJob>& jobs = m.jobs;
  jobs.clear();
  if (p.n > 1) {
    for_tokens(p.pool, n_pick, d,
               [&](int64_t r) { std::copy_n(&xin[m.token_of[r] * d], d, &m.xe[r * d]); });
  }
  for (int e = 0; e < c.n_expert; ++e) {
    const int b = m.begin[e], cnt = m.begin[e + 1] - b;
    if (cnt == 0) continue;
    const float* x = p.n > 1 ? &m.xe[b * d] : xin;
    if (gated) jobs.push_back({&W.gate[e], x, cnt, &m.gate[b * f]});
    jobs.push_back({&W.up[e], x, cnt, &m.up[b * f]});
  }
  // Gate and up of every chosen expert as one task list over the threads.
  matmul_jobs(p, jobs);
  for (int e = 0; e < c.n_expert; ++e) {
    const int b = m.begin[e], cnt = m.begin[e + 1] - b;
    add_expert_bias(p, W.gate_b, e, b, cnt, f, m.gate.data());
    add_expert_bias(p, W.up_b, e, b, cnt, f, m.up.data());
  }
  for_elems(p.pool, n_pick * f, [&](int64_t b, int64_t e) {
    if (!gated) {  // nemotron_h_moe: relu(up)^2, in place
      for (int64_t i = b; i < e; ++i) {
        const float r = std::max(m.up[i], 0.f);
        m.up[i] = r * r;
      }
    } else if (c.ffn_act == FfnAct::kSwigluOai) {
      kernels::swiglu_oai_mul(m.gate.data() + b, m.up.data() + b, e - b, kernels::kSwigluOaiAlpha,
                              c.swiglu_limit);
    } else if (c.ffn_act == FfnAct::kGeluTanh) {  // Gemma 4
      kernels::gelu_mul(m.gate.data() + b, m.up.data() + b, e - b);
    } else {
      kernels::silu_mul(m.gate.data() + b, m.up.data() + b, e - b);
    }
  });
  jobs.clear();
  for (int e = 0; e < c.n_expert; ++e) {
    const int b = m.begin[e], cnt = m.begin[e + 1] - b;
    const float* act = gated ? &m.gate[b * f] : &m.up[b * f];
    if (cnt > 0) jobs.push_back({&W.down[e], act, cnt, &m.ye[b * d]});
  }
  matmul_jobs(p, jobs);
  for (int e = 0; e < c.n_expert; ++e) {
    const int b = m.begin[e], cnt = m.begin[e + 1] - b;
    add_expert_bias(p, W.down_b, e, b, cnt, d, m.ye.data());
    if (!W.down_scale.empty() && cnt > 0) {  // Gemma 4: each expert's output scale
      const float sc = W.down_scale[e];
      for_tokens(p.pool, cnt, d, [&](int64_t r) { kernels::scale(&m.ye[(b + r) * d], sc, d); });
    }
  }
}

// The shared expert's output, m.shared_h2 [n][n_embd], and its gate, m.shared_gate (qwen2moe;
// 1 for granitehybrid's ungated one).
void run_shared_expert(const LayerPass& p, const MoeWeights& W) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  MoeScratch& m = s.own<MoeScratch>();
  const int64_t n = p.n, d = c.n_embd, f = c.n_ff_shexp;
  resize(m.shared_h, n * f);
  resize(m.shared_h2, n * std::max(f, d));
  resize(m.shared_gate, n);
  if (W.shared_gate.n_out == 0) {  // nemotron_h_moe: down · relu(up · h)^2, added as it is
    p.matmul(W.shared_up, s.xb.data(), n, m.shared_h.data());
    for_elems(p.pool, n * f, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float r = std::max(m.shared_h[i], 0.f);
        m.shared_h[i] = r * r;
      }
    });
    p.matmul(W.shared_down, m.shared_h.data(), n, m.shared_h2.data());
    std::fill_n(m.shared_gate.data(), n, 1.f);
    return;
  }
  const kernels::WeightMatrix* ws[] = {&W.shared_gate, &W.shared_up};
  float* ys[] = {m.shared_h.data(), m.shared_h2.data()};
  p.matmul_multi(ws, s.xb.data(), n, ys);
  for_tokens(p.pool, n, d, [&](int64_t i) {
    if (W.shared_ungated) {  // granitehybrid: added as it is (1 * h is exact)
      m.shared_gate[i] = 1.f;
      return;
    }
    const float g = kernels::dot(W.shared_gate_inp.data(), &s.xb[i * d], d);
    m.shared_gate[i] = 1.f / (1.f + std::exp(-g));
  });
  for_elems(p.pool, n * f, [&](int64_t b, int64_t e) {
    kernels::silu_mul(m.shared_h.data() + b, m.shared_h2.data() + b, e - b);
  });
  p.matmul(W.shared_down, m.shared_h.data(), n, m.shared_h2.data());
}

// Gemma 4's dense feed-forward beside the experts: m.dense_out = post_ffw_norm_1(down ·
// (gelu(gate · h) * (up · h))), h = rms_norm(x) · ffn_norm.
void dense_beside_experts(const LayerPass& p, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  MoeScratch& m = s.own<MoeScratch>();
  const int64_t n = p.n, d = c.n_embd, n_ff = L.w_gate.n_out;
  resize(s.xb, n * d);
  resize(s.hb, n * n_ff);
  resize(s.hb2, n * n_ff);
  resize(m.dense_out, n * d);
  for_tokens(p.pool, n, d, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * d], L.ffn_norm.data(), &s.xb[i * d], d, c.rms_eps);
  });
  const kernels::WeightMatrix* gate_up[] = {&L.w_gate, &L.w_up};
  float* gate_up_out[] = {s.hb.data(), s.hb2.data()};
  p.matmul_multi(gate_up, s.xb.data(), n, gate_up_out);
  for_elems(p.pool, n * n_ff, [&](int64_t b, int64_t e) {
    kernels::gelu_mul(s.hb.data() + b, s.hb2.data() + b, e - b);
  });
  p.matmul(L.w_down, s.hb.data(), n, m.dense_out.data());
  for_tokens(p.pool, n, d, [&](int64_t i) {
    float* y = &m.dense_out[i * d];
    kernels::rms_norm(y, L.ffn_post_norm_1.data(), y, d, c.rms_eps);
  });
}

// The router's and experts' scratch of n tokens (k experts each), for either MoE block.
void size_moe_scratch(const ModelConfig& c, int64_t n, MoeScratch& m) {
  const int64_t d = expert_width(c), n_pick = n * c.n_expert_used;
  resize(m.probs, n * c.n_expert);
  m.chosen.resize(n_pick);
  m.weight.resize(n_pick);
  m.row_of.resize(n_pick);
  if (n > 1) resize(m.xe, n_pick * d);
  resize(m.gate, n_pick * c.n_ff_exp);
  resize(m.up, n_pick * c.n_ff_exp);
  resize(m.ye, n_pick * d);
}

// Gemma 4's MoE layer (ModelConfig::moe_beside_dense), as llama.cpp's gemma4.cpp:
//   dense = post_ffw_norm_1(dense feed-forward(rms_norm(x) · ffn_norm))
//   l = router · (rms_norm(x) / sqrt(n_embd) · ffn_gate_inp.scale); softmax, the
//       n_expert_used most probable, their weights renormalized to sum 1
//   experts = post_ffw_norm_2(sum over the chosen, best first, of w_e · ffn_down_exps.scale[e]
//             · down_e(gelu(gate_e · h2) * (up_e · h2))), h2 = rms_norm(x) · pre_ffw_norm_2
//   x += post_ffw_norm(dense + experts)
void moe_beside_dense_block(const LayerPass& p, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  const MoeWeights& W = L.moe;
  ForwardScratch& s = p.s;
  MoeScratch& m = s.own<MoeScratch>();
  const int64_t n = p.n, d = c.n_embd, k = c.n_expert_used;
  dense_beside_experts(p, L);
  resize(m.router_in, n * d);
  size_moe_scratch(c, n, m);
  const float inv_sqrt_d = 1.f / std::sqrt(static_cast<float>(d));
  for_tokens(p.pool, n, d, [&](int64_t i) {
    float* r = &m.router_in[i * d];
    kernels::rms_norm(&s.x[i * d], W.router_in_scale.data(), r, d, c.rms_eps);
    kernels::scale(r, inv_sqrt_d, d);
    kernels::rms_norm(&s.x[i * d], L.ffn_pre_norm_2.data(), &s.xb[i * d], d, c.rms_eps);
  });
  p.matmul(W.router, m.router_in.data(), n, m.probs.data());
  for_tokens(p.pool, n, c.n_expert, [&](int64_t i) {
    route(&m.probs[i * c.n_expert], c, W.select_bias.empty() ? nullptr : W.select_bias.data(),
          &m.chosen[i * k], &m.weight[i * k]);
  });
  group_by_expert(c, n, m);
  run_experts(p, W, s.xb.data());
  for_tokens(p.pool, n, k * d, [&](int64_t i) {
    float* out = &s.xb[i * d];
    std::fill_n(out, d, 0.f);
    for (int64_t j = 0; j < k; ++j) {
      kernels::axpy(m.weight[i * k + j], &m.ye[m.row_of[i * k + j] * d], out, d);
    }
    kernels::rms_norm(out, L.ffn_post_norm_2.data(), out, d, c.rms_eps);
    kernels::add(out, &m.dense_out[i * d], d);
    kernels::rms_norm(out, L.ffn_post_norm.data(), out, d, c.rms_eps);
    p.add_residual(&s.x[i * d], out);
  });
}

}  // namespace

void moe_ffn_block(const LayerPass& p, const LayerWeights& L) {
  if (p.c.moe_beside_dense) return moe_beside_dense_block(p, L);
  const ModelConfig& c = p.c;
  const MoeWeights& W = L.moe;
  ForwardScratch& s = p.s;
  MoeScratch& m = s.own<MoeScratch>();
  const int64_t n = p.n, d = c.n_embd, k = c.n_expert_used;
  resize(s.xb, n * d);
  size_moe_scratch(c, n, m);

  for_tokens(p.pool, n, d, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * d], L.ffn_norm.data(), &s.xb[i * d], d, c.rms_eps);
  });
  p.matmul(W.router, s.xb.data(), n, m.probs.data());
  for_tokens(p.pool, n, c.n_expert, [&](int64_t i) {
    if (!W.router_b.empty()) kernels::add(&m.probs[i * c.n_expert], W.router_b.data(), c.n_expert);
    route(&m.probs[i * c.n_expert], c, W.select_bias.empty() ? nullptr : W.select_bias.data(),
          &m.chosen[i * k], &m.weight[i * k]);
  });
  group_by_expert(c, n, m);
  if (c.moe_latent > 0) {  // nemotron_h_moe: the experts in the latent width
    const int64_t dl = c.moe_latent;
    resize(m.latent, n * dl);
    resize(m.latent_sum, n * dl);
    resize(m.latent_y, n * d);
    p.matmul(W.latent_down, s.xb.data(), n, m.latent.data());
    run_experts(p, W, m.latent.data());
    for_tokens(p.pool, n, k * dl, [&](int64_t i) {
      float* sum = &m.latent_sum[i * dl];
      std::fill_n(sum, dl, 0.f);
      for (int64_t j = 0; j < k; ++j) {
        kernels::axpy(m.weight[i * k + j], &m.ye[m.row_of[i * k + j] * dl], sum, dl);
      }
    });
    p.matmul(W.latent_up, m.latent_sum.data(), n, m.latent_y.data());
  } else {
    run_experts(p, W, s.xb.data());
  }
  if (W.has_shared()) run_shared_expert(p, W);

  // out = sum of w · expert output (most probable first) [+ gate · shared], then x += out;
  // s.xb (the normed input, read by every matrix above) holds out.
  for_tokens(p.pool, n, k * d, [&](int64_t i) {
    float* out = &s.xb[i * d];
    if (c.moe_latent > 0) {
      std::copy_n(&m.latent_y[i * d], d, out);
    } else {
      std::fill_n(out, d, 0.f);
      for (int64_t j = 0; j < k; ++j) {
        kernels::axpy(m.weight[i * k + j], &m.ye[m.row_of[i * k + j] * d], out, d);
      }
    }
    if (W.has_shared()) kernels::axpy(m.shared_gate[i], &m.shared_h2[i * d], out, d);
    p.add_residual(&s.x[i * d], out);
  });
}

}  // namespace tova::model
