// The forward pass of a multi-token prediction (MTP, "nextn") block (Qwen3.5/3.6), as
// llama.cpp's draft-mtp graph computes it (src/models/qwen35.cpp, qwen35moe.cpp: graph_mtp):
//
//   x   = eh_proj · [rms_norm(embed(token)) · enorm ; rms_norm(h) · hnorm]   (token half first)
//   x  += attention(x)            one full-attention layer of the family's kind (gated queries,
//                                 per-head q/k norms, the model's RoPE), its own K/V
//   x  += ffn(x)                  dense (qwen35) or routed experts + shared expert (qwen35moe)
//   h'  = rms_norm(x) · head_norm,  logits = head · h'
//
// h is the main model's final-normed hidden state (Model::forward's `hidden`) at the position
// before the token's, or the block's own h' of the token before when it chains drafts. The
// block's layer is run by the same kind files as the main stack's layers (attention_block,
// dense_ffn_block, moe_ffn_block) over a one-layer view of the config (nextn_config), so its
// K/V lives in a one-layer multi-state under any policy and K/V type.
#include <vector>

#include "kernels/ops.h"
#include "kernels/quant.h"
#include "model/batch_prep.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"
#include "model/model.h"

namespace tova::model {
namespace {

struct NextnScratch : KindScratch {
  std::vector<float> cat;  // [n_tok][2 n_embd]: normed token embedding, then normed h
  std::vector<float> e;    // [n_tok][n_embd]: token embeddings
};

}  // namespace

kv::MultiStateOptions Model::nextn_state_options(const kv::PolicySpec& policy,
                                                 const KvFormat& kv_type) const {
  const ModelConfig& c = nextn_config_;
  return kv::MultiStateOptions{.n_layer = 1,
                               .n_head = c.n_head,
                               .n_head_kv = c.n_head_kv,
                               .head_dim = c.head_dim,
                               .policy = policy,
                               .kv_type = kv_type,
                               .max_new = 1};
}

Status Model::forward_nextn(int block, std::span<const BatchToken> batch, const float* h,
                            ThreadPool& pool, ForwardScratch& s, float* logits,
                            float* h_out) const {
  if (block < 0 || block >= config_.n_nextn) {
    return make_error("{}: no multi-token prediction block {} (the file has {})", file_->path(),
                      block, config_.n_nextn);
  }
  const ModelConfig& c = nextn_config_;
  const NextnWeights& B = weights_.nextn[block];
  const int64_t n = static_cast<int64_t>(batch.size());
  if (n == 0) return ok_status();
  TOVA_RETURN_IF_ERROR(prepare_batch(batch, {}, c, s));
  LayerPass p{.c = c, .s = s, .pool = pool, .n = n, .f32_activations = options_.f32_activations};
  p.rope = c.rope;
  if (!weights_.rope_freqs.empty()) p.rope.freq_factors = weights_.rope_freqs.data();

  const int64_t d = c.n_embd;
  NextnScratch& ns = s.own<NextnScratch>();
  resize(ns.cat, n * 2 * d);
  resize(ns.e, n * d);
  for_tokens(pool, n, 2 * d, [&](int64_t i) {
    float* e = &ns.e[i * d];
    kernels::dequantize_row(B.embed.type, B.embed.data + B.embed.row_bytes * batch[i].token, e, d);
    kernels::rms_norm(e, B.enorm.data(), &ns.cat[i * 2 * d], d, c.rms_eps);
    kernels::rms_norm(&h[i * d], B.hnorm.data(), &ns.cat[i * 2 * d + d], d, c.rms_eps);
  });
  resize(s.x, n * d);
  p.matmul(B.eh_proj, ns.cat.data(), n, s.x.data());

  const LayerPlan lp{
      .mixer = MixerKind::kAttention, .holds = MixerState::kKv, .state = 0, .owner = 0};
  attention_block(p, 0, lp, B.layer);
  switch (B.layer.ffn_kind) {
    case FfnKind::kDense:
      dense_ffn_block(p, B.layer);
      break;
    case FfnKind::kMoe:
      moe_ffn_block(p, B.layer);
      break;
    case FfnKind::kReluSqr:
      relu2_ffn_block(p, B.layer);
      break;
    case FfnKind::kNone:
      break;
  }
  for (const SequenceRun& run : s.runs) run.state->advance(static_cast<int64_t>(run.idx.size()));

  // Every row through the head's norm (the chain's next h); the head for the rows that want
  // logits.
  int64_t n_out = 0;
  for (int64_t i = 0; i < n; ++i) n_out += batch[i].logits ? 1 : 0;
  resize(s.logit_in, n * d);
  for_tokens(pool, n, d, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * d], B.head_norm.data(), &s.logit_in[i * d], d, c.rms_eps);
  });
  if (h_out != nullptr) std::copy_n(s.logit_in.data(), n * d, h_out);
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!batch[i].logits) continue;
    if (k != i) std::copy_n(&s.logit_in[i * d], d, &s.logit_in[k * d]);
    ++k;
  }
  if (n_out > 0) p.matmul(B.head, s.logit_in.data(), n_out, logits);
  return ok_status();
}

}  // namespace tova::model
