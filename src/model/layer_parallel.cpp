// Parallel mixers (layer_kinds.h): two token mixer kinds side by side on the same normed input,
// their outputs summed before they join the residual stream, as Falcon-H1's layers run attention
// and Mamba2 (llama.cpp's src/models/falcon-h1.cpp):
//   h  = rms_norm(x) · attn_norm
//   x += first(h) + second(h)        (the sum first, then the residual add, as llama.cpp adds)
// Each mixer is its own kind's file (its MixerSpec::mix); this file only feeds both the same h
// and adds. A parallel layer keeps both states: the first kind's K/V in the multi-state's K/V
// layer lp.state (bounded by the sequence's policy), the second kind's fixed-size state in its
// recurrent(lp.recurrent) (MixerState::kKvAndRecurrent). One spec per pairing, instantiated
// from the templates below; today attention beside Mamba2 (MixerKind::kAttnMamba2).
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

struct ParallelScratch : KindScratch {
  std::vector<float> h;       // [n_tok][n_embd] the normed input both mixers read
  std::vector<float> second;  // [n_tok][n_embd] the second mixer's output
};

// The first kind (attention) holds K/V, the second (a recurrent kind) a recurrent state.
template <MixerKind First, MixerKind Second>
void parallel_block(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L) {
  const int64_t n = p.n, E = p.c.n_embd;
  ForwardScratch& s = p.s;
  ParallelScratch& b = s.own<ParallelScratch>();
  resize(b.h, n * E);
  resize(b.second, n * E);
  resize(s.xb, n * E);
  for_tokens(p.pool, n, E, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * E], L.attn_norm.data(), &b.h[i * E], E, p.c.rms_eps);
  });
  const MixerSpec& first = mixer_spec(First);
  const MixerSpec& second = mixer_spec(Second);
  const LayerPlan first_plan{.mixer = First, .holds = first.holds, .state = lp.state, .owner = il};
  first.mix(p, il, first_plan, L, b.h.data(), s.xb.data());
  second.mix(p, il, lp, L, b.h.data(), b.second.data());
  for_tokens(p.pool, n, E, [&](int64_t i) {
    float* out = &s.xb[i * E];
    kernels::add(out, &b.second[i * E], E);
    p.add_residual(&s.x[i * E], out);
  });
}

template <MixerKind Second>
kv::RecurrentShape second_shape(const ModelConfig& c) {
  return mixer_spec(Second).recurrent_shape(c);
}

}  // namespace

extern const MixerSpec kMixerAttnMamba2{
    .kind = MixerKind::kAttnMamba2,
    .name = "attention+mamba2",
    .holds = MixerState::kKvAndRecurrent,
    .recurrent_shape = second_shape<MixerKind::kMamba2>,
    .block = parallel_block<MixerKind::kAttention, MixerKind::kMamba2>};

}  // namespace tova::model
