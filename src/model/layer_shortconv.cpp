// The gated short-convolution mixer kind (layer_kinds.h), as llama.cpp computes LFM2's
// convolution layers (src/models/lfm2.cpp, build_shortconv_block). With E = n_embd and
// L = shortconv_l_cache (the conv's kernel size), for each token of a sequence in order:
//   h      = rms_norm(x) · attn_norm                    (LFM2's operator_norm)
//   B|C|xs = shortconv.in_proj · h                      [3E], split in three rows of E
//   u      = B * xs                                     the input gate
//   v      = causal depthwise conv1d of u over the last L tokens (shortconv.conv [E][L],
//            oldest tap first; its state: the last L - 1 values of u, kv/recurrent_state.h's
//            conv part, the delta part empty)
//   x     += shortconv.out_proj · (C * v)               the output gate, then the projection
// No activation anywhere: ggml_ssm_conv's sums, tap by tap in float (kernels::causal_conv1d).
// Each sequence's state is its multi-state's recurrent(lp.state). Threads: the conv over blocks
// of channels, the projections inside the matmul kernels over the whole batch; the buffers are
// the kind's own (ShortConvScratch), grown once, never per token.
#include <vector>

#include "kernels/ops.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

struct ShortConvScratch : KindScratch {
  std::vector<float> bcx;  // [n_tok][3E] in_proj's B, C and x rows; x becomes B * x, then conv
  std::vector<float> y;    // [n_tok][E] C * conv, out_proj's input
};

// Per sequence and layer: the last L - 1 inputs of each of the E channels, no delta matrix.
kv::RecurrentShape state_shape(const ModelConfig& c) {
  return {.conv_channels = c.n_embd, .conv_taps = c.shortconv_l_cache - 1};
}

void shortconv_block(const LayerPass& p, int /*il*/, const LayerPlan& lp, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  const ShortConvWeights& W = L.shortconv;
  ForwardScratch& s = p.s;
  ShortConvScratch& b = s.own<ShortConvScratch>();
  ThreadPool& pool = p.pool;
  const int64_t n = p.n, E = c.n_embd;
  const int taps = c.shortconv_l_cache - 1;
  resize(s.xb, n * E);
  resize(b.bcx, n * 3 * E);
  resize(b.y, n * E);

  for_tokens(pool, n, E, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * E], L.attn_norm.data(), &s.xb[i * E], E, c.rms_eps);
  });
  p.matmul(W.in_proj, s.xb.data(), n, b.bcx.data());
  for_tokens(pool, n, E, [&](int64_t i) {
    const float* gate = &b.bcx[i * 3 * E];
    float* u = &b.bcx[i * 3 * E + 2 * E];
    for (int64_t e = 0; e < E; ++e) u[e] *= gate[e];
  });

  // The conv, each sequence through its state (recurrent_conv.cpp), in place on the u rows.
  causal_conv_runs(p, lp.state, W.conv.data(), b.bcx.data() + 2 * E, 3 * E, E, taps,
                   /*silu=*/false);

  for_tokens(pool, n, E, [&](int64_t i) {
    const float* gate = &b.bcx[i * 3 * E + E];
    const float* v = &b.bcx[i * 3 * E + 2 * E];
    float* y = &b.y[i * E];
    for (int64_t e = 0; e < E; ++e) y[e] = gate[e] * v[e];
  });
  p.matmul(W.out_proj, b.y.data(), n, s.xb.data());
  for_tokens(pool, n, E, [&](int64_t i) { kernels::add(&s.x[i * E], &s.xb[i * E], E); });
  followers_take_recurrent(p, lp.state);
}

}  // namespace

extern const MixerSpec kMixerShortConv{.kind = MixerKind::kShortConv,
                                       .name = "shortconv",
                                       .holds = MixerState::kRecurrent,
                                       .recurrent_shape = state_shape,
                                       .block = shortconv_block};

}  // namespace tova::model
