// The shared-K/V attention kind (layer_kinds.h): a layer that computes queries only and attends
// over the K/V of an earlier layer of its kind (Gemma 4 E2B/E4B's last
// attention.shared_kv_layers layers; ModelConfig::layer_kv_owner). It holds nothing in the
// multi-state: it reads its owner's layer state as the owner held it for each token of the
// step, every token joined and nothing evicted yet. Model::forward ends the owner's step
// (kv::end_step) once its shared layers attended, and splits a step whose policy would evict
// between its tokens into single tokens, so each token sees exactly what the owner's token saw.
// The policy is the owner's: a shared layer's attention is not observed (it scores nothing)
// and evicts nothing (docs/POLICIES-EXTRA.md).
#include "kernels/ops.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {

void shared_kv_block(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  const kernels::RopeParams rope = p.rope_of(il);
  ForwardScratch& s = p.s;
  ThreadPool& pool = p.pool;
  const int64_t n = p.n;
  const int n_head_kv = c.layer_n_head_kv.empty() ? c.n_head_kv : c.layer_n_head_kv[il];
  const int head_dim = c.layer_head_dim.empty() ? c.head_dim : c.layer_head_dim[il];
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * head_dim;
  resize(s.xb, n * c.n_embd);
  resize(s.attn.q, n * q_dim);
  for_tokens(pool, n, c.n_embd, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * c.n_embd], L.attn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                      c.rms_eps);
  });
  p.matmul(L.wq, s.xb.data(), n, s.attn.q.data());
  if (!L.q_norm.empty()) {
    for_tokens(pool, n, q_dim, [&](int64_t i) {
      for (int64_t h = i * c.n_head; h < (i + 1) * c.n_head; ++h) {
        float* q = &s.attn.q[h * head_dim];
        kernels::rms_norm(q, L.q_norm.data(), q, head_dim, c.rms_eps);
      }
    });
  }
  attend_over_owner(p, lp.state, n_head_kv, head_dim, rope);
  p.matmul(L.wo, s.attn.att.data(), n, s.xb.data());
  for_tokens(pool, n, c.n_embd, [&](int64_t i) {
    float* xb = &s.xb[i * c.n_embd];
    if (!L.attn_post_norm.empty()) {
      kernels::rms_norm(xb, L.attn_post_norm.data(), xb, c.n_embd, c.rms_eps);
    }
    p.add_residual(&s.x[i * c.n_embd], xb);
  });
}

extern const MixerSpec kMixerSharedKv{.kind = MixerKind::kSharedKv,
                                      .name = "shared_kv",
                                      .holds = MixerState::kOwners,
                                      .block = shared_kv_block};

}  // namespace tova::model
