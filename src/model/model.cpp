#include "model/model.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/hash.h"
#include "core/memory.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "model/batch_prep.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"
#include "kv/layer_step.h"

namespace tova::model {

namespace {

uint64_t fingerprint_of(const ModelConfig& c, const ModelWeights& w) {
  const int64_t shape[] = {c.n_layer,   c.n_embd,     c.n_head,
                           c.n_head_kv, c.head_dim,   c.n_ff,
                           c.n_vocab,   c.rope.n_rot, static_cast<int64_t>(w.n_bytes)};
  uint64_t h = fnv1a(shape, sizeof(shape));
  const kernels::WeightMatrix& e = w.token_embd;
  // The embedding's first rows tell apart models of the same shape (e.g. retrained ones).
  const size_t n = std::min<size_t>(static_cast<size_t>(e.row_bytes) * c.n_vocab, 1 << 16);
  return fnv1a(e.data, n, h);
}

}  // namespace

WeightHolding choose_weight_holding(uint64_t file_bytes, uint64_t available_bytes) {
  if (available_bytes == 0) return WeightHolding::kRead;  // unknown: own memory as before
  if (file_bytes <= available_bytes / 2) return WeightHolding::kRead;
  if (file_bytes <= available_bytes / 5 * 4) return WeightHolding::kReadDropCache;
  return WeightHolding::kMap;
}

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const ModelOptions& options) {
  WeightHolding holding = WeightHolding::kMap;
  if (!options.mmap) {
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    holding = ec ? WeightHolding::kRead : choose_weight_holding(size, available_memory_bytes());
  }
  const bool map = holding == WeightHolding::kMap;
  TOVA_ASSIGN_OR_RETURN(
      std::unique_ptr<io::GgufFile> file,
      io::GgufFile::open(path, map                                          ? io::GgufFile::Load::kMap
                               : holding == WeightHolding::kReadDropCache ? io::GgufFile::Load::kReadDropCache
                                                                          : io::GgufFile::Load::kRead));
  TOVA_ASSIGN_OR_RETURN(std::unique_ptr<Model> m, from_file(std::move(file), options));
  m->mapped_ = map;
  return m;
}

Result<std::unique_ptr<Model>> Model::from_file(std::unique_ptr<io::GgufFile> file,
                                                const ModelOptions& options) {
  if (file == nullptr) return make_error("Model::from_file: no file");
  auto m = std::unique_ptr<Model>(new Model());
  m->options_ = options;
  m->file_ = std::move(file);
  TOVA_ASSIGN_OR_RETURN(m->config_, load_config(*m->file_));
  TOVA_ASSIGN_OR_RETURN(m->weights_, load_weights(*m->file_, m->config_));
  if (options.repack && !options.f32_activations) {
    TOVA_ASSIGN_OR_RETURN(m->repack_stats_, repack_weights(*m->file_, m->weights_));
  }
  auto plan = plan_layers(m->config_, m->weights_);
  if (!plan.ok()) return make_error("{}: {}", m->file_->path(), plan.message());
  m->plan_ = std::move(*plan);
  if (m->config_.n_nextn > 0) {
    auto nc = nextn_config(m->config_);
    if (!nc.ok()) return make_error("{}: {}", m->file_->path(), nc.message());
    m->nextn_config_ = std::move(*nc);
  }
  m->fingerprint_ = fingerprint_of(m->config_, m->weights_);
  return m;
}

kv::MultiStateOptions Model::state_options(const kv::PolicySpec& policy, const KvFormat& kv_type,
                                           int max_new) const {
  kv::MultiStateOptions o{.n_layer = config_.n_layer,
                          .n_head = config_.n_head,
                          .n_head_kv = config_.n_head_kv,
                          .head_dim = config_.head_dim,
                          .policy = policy,
                          .kv_type = kv_type,
                          .max_new = max_new,
                          .windows = config_.layer_window,
                          .layer_n_head_kv = config_.layer_n_head_kv,
                          .layer_head_dim = config_.layer_head_dim};
  // Shared-K/V layers read their owner's K/V after its step: under `full` a window owner drops
  // at the step's end, so that prompts past the window stay batched.
  o.window_drops_at_step_end = config_.n_shared_kv_layers() > 0;
  const auto own_kv = [](const LayerPlan& lp) { return lp.holds == MixerState::kKv; };
  if (std::all_of(plan_.begin(), plan_.end(), own_kv)) return o;
  // A hybrid model: the multi-state's layers are the layers with K/V of their own; a layer of
  // a recurrent kind has a fixed-size state instead (kv/recurrent_state.h), a parallel layer
  // (attention beside Mamba2) both, and a shared-K/V layer none (it reads its owner's).
  // Per-layer arrays follow suit.
  o.n_layer = 0;
  o.windows.clear();
  o.layer_n_head_kv.clear();
  o.layer_head_dim.clear();
  for (int il = 0; il < config_.n_layer; ++il) {
    const LayerPlan& lp = plan_[il];
    if (lp.holds == MixerState::kRecurrent || lp.holds == MixerState::kKvAndRecurrent) {
      o.recurrent.push_back(mixer_spec(lp.mixer).recurrent_shape(config_));
    }
    if (lp.holds == MixerState::kRecurrent) continue;
    if (lp.holds == MixerState::kOwners) continue;  // reads its owner's K/V: holds nothing
    if (lp.holds == MixerState::kNothing) continue;  // mixes no tokens: holds nothing
    ++o.n_layer;
    if (!config_.layer_window.empty()) o.windows.push_back(config_.layer_window[il]);
    if (!config_.layer_n_head_kv.empty()) o.layer_n_head_kv.push_back(config_.layer_n_head_kv[il]);
    if (!config_.layer_head_dim.empty()) o.layer_head_dim.push_back(config_.layer_head_dim[il]);
  }
  return o;
}

Status Model::forward(std::span<const BatchToken> batch, ThreadPool& pool, ForwardScratch& s,
                      float* logits, std::span<const Follower> followers, float* hidden) const {
  if (config_.layer_kv_owner.empty() || !splits_between_tokens(batch, followers, s)) {
    return forward_step(batch, pool, s, logits, followers, hidden);
  }
  // Shared-K/V layers read their owner's K/V after its step; a sequence whose policy would
  // evict between two tokens of this step would leave them a state no token saw
  // (kv::evicts_between_tokens), so the batch goes token by token, each exactly as alone.
  int64_t n_out = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchToken& t = batch[i];
    std::vector<Follower> own;
    for (const Follower& f : followers) {
      if (f.leader == t.state) own.push_back(f);
    }
    TOVA_RETURN_IF_ERROR(forward_step({&t, 1}, pool, s,
                                      logits + n_out * static_cast<int64_t>(config_.n_vocab), own,
                                      hidden ? hidden + i * config_.n_embd : nullptr));
    n_out += t.logits ? 1 : 0;
  }
  return ok_status();
}

bool Model::splits_between_tokens(std::span<const BatchToken> batch,
                                  std::span<const Follower> followers, ForwardScratch& s) const {
  group_by_sequence(batch, s.runs);
  for (const SequenceRun& run : s.runs) {
    if (run.state == nullptr) return false;  // forward_step refuses the batch
    std::vector<kv::MultiState*> fw;
    for (const Follower& f : followers) {
      if (f.leader == run.state) fw.push_back(f.state);
    }
    if (kv::evicts_between_tokens(*run.state, fw, static_cast<int>(run.idx.size()), run.whole)) {
      return true;
    }
  }
  return false;
}

namespace {

// The batch's rows of the residual stream, s.x [n][n_embd]: each token's embedding (scaled as
// the family scales it) or a row given as it is; Gemma 4 E2B/E4B's per-layer inputs.
void embed_batch(const LayerPass& p, const ModelWeights& w, std::span<const BatchToken> batch) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  ThreadPool& pool = p.pool;
  const int64_t n = p.n;
  resize(s.x, n * c.n_embd);
  for_tokens(pool, n, c.n_embd, [&](int64_t i) {
    if (batch[i].embd != nullptr) {  // a row given as it is (an image token)
      std::copy_n(batch[i].embd, c.n_embd, &s.x[i * c.n_embd]);
      return;
    }
    kernels::dequantize_row(w.token_embd.type,
                            w.token_embd.data + w.token_embd.row_bytes * batch[i].token,
                            &s.x[i * c.n_embd], c.n_embd);
    if (c.embd_scale != 1.f) kernels::scale(&s.x[i * c.n_embd], c.embd_scale, c.n_embd);
  });
  if (c.n_embd_per_layer > 0) {  // Gemma 4 E2B/E4B: every layer's own input
    s.tokens.resize(n);
    for (int64_t i = 0; i < n; ++i) s.tokens[i] = batch[i].token;
    per_layer_inputs(p, w, s.tokens);
  }

}

// The final-normed rows a drafter reads (hidden), then the logits of the rows that want them.
void output_rows(const LayerPass& p, const ModelWeights& w, std::span<const BatchToken> batch,
                 float* logits, float* hidden) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  ThreadPool& pool = p.pool;
  const int64_t n = p.n;
  if (hidden != nullptr) {  // every row final-normed: the prediction block's input
    for_tokens(pool, n, c.n_embd, [&](int64_t i) {
      kernels::rms_norm(&s.x[i * c.n_embd], w.output_norm.data(), &hidden[i * c.n_embd], c.n_embd,
                        c.rms_eps);
    });
  }
  // Final norm and output projection for the rows that want logits.
  int64_t n_out = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!batch[i].logits) continue;
    resize(s.logit_in, (n_out + 1) * c.n_embd);
    kernels::rms_norm(&s.x[i * c.n_embd], w.output_norm.data(), &s.logit_in[n_out * c.n_embd],
                      c.n_embd, c.rms_eps);
    ++n_out;
  }
  if (n_out > 0) p.matmul(w.output, s.logit_in.data(), n_out, logits);
  if (n_out > 0 && c.final_softcap > 0.f)
    kernels::softcap(logits, n_out * c.n_vocab, c.final_softcap);
  // Granite: logits / logit_scale, as llama.cpp scales them (by the reciprocal, in float).
  if (n_out > 0 && c.logit_scale != 1.f)
    kernels::scale(logits, 1.f / c.logit_scale, n_out * c.n_vocab);
}

}  // namespace

Status Model::forward_step(std::span<const BatchToken> batch, ThreadPool& pool,
                           ForwardScratch& s, float* logits, std::span<const Follower> followers,
                           float* hidden) const {
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  const int64_t n = static_cast<int64_t>(batch.size());
  if (n == 0) return ok_status();
  TOVA_RETURN_IF_ERROR(prepare_batch(batch, followers, c, s));
  LayerPass p{.c = c, .s = s, .pool = pool, .n = n, .f32_activations = options_.f32_activations};
  p.rope = c.rope;
  if (!w.rope_freqs.empty()) p.rope.freq_factors = w.rope_freqs.data();

  embed_batch(p, w, batch);

  // Layers: a token mixer, then a feed-forward block, each of the kind the family chose; the
  // plan says where each mixer's state lives.
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[il];
    const LayerPlan& lp = plan_[il];
    mixer_spec(lp.mixer).block(p, il, lp, L);
    switch (L.ffn_kind) {
      case FfnKind::kDense: dense_ffn_block(p, L); break;
      case FfnKind::kMoe: moe_ffn_block(p, L); break;
      case FfnKind::kReluSqr: relu2_ffn_block(p, L); break;
      case FfnKind::kNone: break;
    }
    if (c.n_embd_per_layer > 0) per_layer_input_block(p, il, L);
    if (L.out_scale != 1.f) {  // Gemma 4's layer_output_scale: the whole stream, not the delta
      for_tokens(pool, n, c.n_embd,
                 [&](int64_t i) { kernels::scale(&s.x[i * c.n_embd], L.out_scale, c.n_embd); });
    }
  }

  // The steps of the layers whose K/V shared layers read end now that those attended.
  for (int il = 0; il < c.n_layer && !c.layer_kv_owner.empty(); ++il) {
    if (!c.kv_shared_later(il)) continue;
    for (const SequenceRun& run : s.runs) {
      kv::end_step(*run.state, run.followers, plan_[il].state, run.idx, s.pos.data());
    }
  }

  // Advance every sequence by the tokens it contributed.
  for (const SequenceRun& run : s.runs) {
    run.state->advance(static_cast<int64_t>(run.idx.size()));
    for (kv::MultiState* f : run.followers) f->advance(static_cast<int64_t>(run.idx.size()));
  }

  output_rows(p, w, batch, logits, hidden);
  return ok_status();
}

}  // namespace tova::model
