// The attention mixer kind (layer_kinds.h): norm, q/k/v projections (+ biases, + per-head q/k
// norms), then for every sequence of the batch its multi-state's step (kv::step_layer: join,
// attend, evict) with RoPE at the positions the state assigns (YaRN's scaling inside the
// rotation), the softmax with the layer's attention sinks where it has them (gpt-oss: one
// logit per head in the denominator, kernels::AttentionArgs::sinks, so the probabilities the
// policies score carry it too), then the output projection (+ bias) and the residual add. Window layers differ only in their rope parameters and in the window the
// multi-state enforces (config.layer_window). A NoPE layer (config.layer_nope) comes with
// rope.n_rot == 0: nothing is rotated, and as its keys carry no position, a sequence in a mode
// that moves positions (gap, rank) attends there exactly as in `absolute` (the pool's pre-RoPE
// keys are its keys).
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
#include "kernels/attention.h"
#include "kernels/kv_rows.h"
#include "kernels/ops.h"
#include "kv/layer_step.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

bool same_rope(const kernels::RopeParams& a, const kernels::RopeParams& b) {
  return a.n_rot == b.n_rot && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.mode == b.mode && a.freq_factors == b.freq_factors &&
         a.yarn_ext_factor == b.yarn_ext_factor && a.yarn_beta_fast == b.yarn_beta_fast &&
         a.yarn_beta_slow == b.yarn_beta_slow && a.yarn_n_ctx_orig == b.yarn_n_ctx_orig &&
         a.mscale == b.mscale;
}

using AttendScratch = AttentionScratch::AttendScratch;

// The layer's attention shape: the model's, or the layer's own (ModelConfig::layer_n_head_kv,
// layer_head_dim: Gemma 4's window and global layers differ).
struct AttnDims {
  int n_head, n_head_kv, head_dim;
};

// The attention arithmetic of one sequence at the points kv::step_layer gives it.
class SequenceAttention final : public kv::StepAttention {
 public:
  struct Shape {
    int n_head, n_head_kv, head_dim;
    float scale, softcap;
    const float* sinks;  // [n_head] or nullptr (LayerWeights::attn_sinks)
  };
  // pool: the forward pass's threads when this is the batch's only sequence (else null): a
  // token's attention at depth splits its slots and heads over them, and the tokens of a
  // prompt are handed out to them whole.
  SequenceAttention(const Shape& shape, const kernels::RopeParams& rope, kv::PositionMode mode,
                    std::span<const int> idx, ForwardScratch& s, AttendScratch& mine,
                    ThreadPool* pool)
      : shape_(shape), rope_(rope), mode_(mode), idx_(idx), s_(s), mine_(mine), pool_(pool) {}

  void joined(const kv::LayerState& L) override {
    if (kv::moves_positions(mode_)) mine_.moved.rotate_keys(L, mode_, rope_, moved_cos_sin());
  }

  void attend(const kv::LayerState& L, int t, float* probs) override {
    // Splitting one token over threads pays only when its attention is large enough to
    // outweigh waking the pool (~64K multiply-adds).
    const int64_t work = static_cast<int64_t>(L.slot_end()) * shape_.n_head * shape_.head_dim;
    const bool split = pool_ != nullptr && shape_.n_head > 1 && work >= kMinSplitWork;
    attend_token(L, t, probs, mine_, split ? pool_ : nullptr);
  }

  // A prompt's tokens over the pool, one whole token per claim, the latest (costliest: they
  // see the most slots) first, each with the single-thread kernel: 512 tokens of a prompt
  // split token by token spent two pool handoffs per token and layer, and the first tokens
  // (too small to split) ran on one thread. Same bits as attend() (attention.h).
  bool attends_in_parallel() const override {
    return pool_ != nullptr && !kv::moves_positions(mode_);
  }
  void attend_many(const kv::LayerState& L, int t0, int t1, float* probs,
                   size_t probs_stride) override {
    const int64_t n = t1 - t0;
    const int64_t work = n * L.slot_end() * shape_.n_head * shape_.head_dim;
    if (pool_ == nullptr || n < 2 || kv::moves_positions(mode_) || work < kMinSplitWork) {
      kv::StepAttention::attend_many(L, t0, t1, probs, probs_stride);
      return;
    }
    pool_->for_each_dynamic(n, [&](int64_t j, int thread) {
      const int t = t1 - 1 - static_cast<int>(j);
      attend_token(L, t, probs != nullptr ? probs + (t - t0) * probs_stride : nullptr,
                   s_.attn.per_thread[thread], nullptr);
    });
  }

 private:
  static constexpr int64_t kMinSplitWork = int64_t{1} << 16;

  // Token t's attention with mine's buffers, its heads and slots split over heads_pool if given.
  void attend_token(const kv::LayerState& L, int t, float* probs, AttendScratch& mine,
                    ThreadPool* heads_pool) const {
    const int i = idx_[t];
    const size_t q_dim = static_cast<size_t>(shape_.n_head) * shape_.head_dim;
    const float* q = &s_.attn.q[i * q_dim];
    const void* k = L.keys();
    KvType k_type = L.kv_type().k;
    bool k_rotated = L.k_rotated();
    if (kv::moves_positions(mode_)) {
      q = mine.moved.rotate_query(L, q, s_.pos[i], shape_.n_head, rope_, moved_cos_sin());
      k = mine.moved.keys.data();
      k_type = mine.moved.type;  // rotated back from the Hadamard basis where stored so
      k_rotated = false;
    }
    const kernels::AttentionArgs a{.q = q,
                                   .n_head = shape_.n_head,
                                   .n_head_kv = shape_.n_head_kv,
                                   .head_dim = shape_.head_dim,
                                   .n_slot = L.n_slot(),
                                   .slot_end = L.slot_end(),
                                   .k = k,
                                   .v = L.values(),
                                   .k_type = k_type,
                                   .v_type = L.kv_type().v,
                                   .k_rotated = k_rotated,
                                   .v_rotated = L.v_rotated(),
                                   .pos = L.pos(),
                                   .max_pos = s_.max_pos[i],
                                   .min_pos = L.min_visible(s_.pos[i]),
                                   .scale = shape_.scale,
                                   .softcap = shape_.softcap,
                                   .sinks = shape_.sinks,
                                   .out = &s_.attn.att[i * q_dim],
                                   .probs = probs};
    // The fused kernel scores a whole GQA group at once: a row per query head of the group
    // (per head when heads are split over threads).
    const size_t n_slot = static_cast<size_t>(L.n_slot());
    if (heads_pool == nullptr) {
      const int group = shape_.n_head / shape_.n_head_kv;
      if (mine.scores.size() < n_slot * group) mine.scores.resize(n_slot * group);
      kernels::AttentionArgs all = a;
      all.scratch = mine.scores.data();
      all.scratch_size = static_cast<int64_t>(mine.scores.size());
      kernels::attention(all);
      return;
    }
    // One token over the pool's threads, in the kernel's three passes: the threads score
    // shares of the slots (reading their part of every K row once, whatever the GQA grouping),
    // then normalize and sum the outputs of shares of the heads. Splitting the scores by heads
    // read a KV group shared by two threads twice (SmolLM2's 3 groups on 2 threads); splitting
    // the outputs by columns instead of heads ran 20 % slower (each thread half of every V row:
    // the prefetchers fetch whole rows for both). Each pass is cut in a few parts per thread,
    // taken by whichever thread is free: with a share per thread and a barrier between the
    // passes, a thread whose core was busy with another process held up the others (decode at
    // depth 1000 on 2 threads, one core busy: 0.61x of 1 thread). Same bits as one
    // attention() call (kernels/attention.h), however the parts fall.
    if (mine.scores.size() < n_slot * shape_.n_head) mine.scores.resize(n_slot * shape_.n_head);
    float* rows = probs != nullptr ? probs : mine.scores.data();
    constexpr int kPartsPerThread = 4;
    constexpr int64_t kSlotGrain = 64;
    heads_pool->parallel_for(
        L.slot_end(), kSlotGrain,
        [&](int64_t s0, int64_t s1) {
          kernels::attention_scores(a, rows, static_cast<int>(s0), static_cast<int>(s1));
        },
        kPartsPerThread);
    heads_pool->parallel_for(
        shape_.n_head, 1,
        [&](int64_t h0, int64_t h1) {
          kernels::attention_normalize(a, rows, static_cast<int>(h0), static_cast<int>(h1));
          kernels::AttentionArgs part = a;
          part.head_begin = static_cast<int>(h0);
          part.head_end = static_cast<int>(h1);
          kernels::attention_outputs(part, rows);
        },
        kPartsPerThread);
  }

  std::span<const float> moved_cos_sin() const {
    return {s_.attn.moved_cs.data(), static_cast<size_t>(s_.attn.moved_cs_n) * rope_.n_rot};
  }

  Shape shape_;
  const kernels::RopeParams& rope_;
  kv::PositionMode mode_;
  std::span<const int> idx_;
  ForwardScratch& s_;
  AttendScratch& mine_;
  ThreadPool* pool_;
};

// Sizes the cos/sin table of mapped positions for the batch's sequences in modes that move
// positions (before threads share it read-only).
void prepare_moved_positions(const kernels::RopeParams& rope, ForwardScratch& s) {
  if (rope.n_rot == 0) return;  // NoPE: no position moves anything
  int64_t need = 0;
  bool any = false;
  for (const SequenceRun& run : s.runs) {
    const kv::PositionMode mode = run.state->positions();
    if (!kv::moves_positions(mode)) continue;
    any = true;
    int64_t held = 0;
    for (int il = 0; il < run.state->n_layer(); ++il) {
      held = std::max<int64_t>(held, run.state->layer(il).n_held());
    }
    const int64_t n_held = held + static_cast<int64_t>(run.idx.size());
    need = std::max(need, kv::max_mapped_position(mode, n_held, s.pos[run.idx.back()]) + 1);
  }
  if (!any) return;
  if (s.attn.moved_cs_n > 0 && !same_rope(s.attn.moved_cs_params, rope)) s.attn.moved_cs_n = 0;
  if (need > s.attn.moved_cs_n) {
    resize(s.attn.moved_cs, static_cast<size_t>(need) * rope.n_rot);
    for (int64_t m = s.attn.moved_cs_n; m < need; ++m) {
      kernels::rope_cos_sin(m, rope, &s.attn.moved_cs[static_cast<size_t>(m) * rope.n_rot]);
    }
    s.attn.moved_cs_n = need;
    s.attn.moved_cs_params = rope;
  }
}

// The cos/sin table of the batch's positions for `rope` (kept while the next layer's rope is
// the same).
void prepare_rope_table(const kernels::RopeParams& rope, ForwardScratch& s, ThreadPool& pool) {
  const int64_t n = static_cast<int64_t>(s.pos.size());
  if (rope.n_rot == 0 || (s.attn.rope_cs_valid && same_rope(s.attn.rope_cs_params, rope))) return;
  resize(s.attn.rope_cs, n * rope.n_rot);
  // n_rot / 2 sines and cosines in double per token: the costliest part of RoPE.
  for_tokens(pool, n, 16 * rope.n_rot, [&](int64_t i) {
    kernels::rope_cos_sin(s.pos[i], rope, &s.attn.rope_cs[i * rope.n_rot]);
  });
  s.attn.rope_cs_params = rope;
  s.attn.rope_cs_valid = true;
}

// RoPE at each token's position, for the sequences whose pools keep rotated keys; the
// cos/sin table is computed once per forward call and reused by every layer that shares the
// same rope parameters. Then the batch's new keys and values converted once into each storage
// type a pool of the batch uses (f32 pools read them as they are), token by token over the pool.
void prepare_rows(const ModelConfig& c, const AttnDims& d, const kernels::RopeParams& rope,
                  const std::vector<float>& sinks, ForwardScratch& s, ThreadPool& pool) {
  const int64_t q_dim = static_cast<int64_t>(d.n_head) * d.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(d.n_head_kv) * d.head_dim;
  const int64_t n = static_cast<int64_t>(s.pos.size());
  const bool nope = rope.n_rot == 0;
  prepare_rope_table(rope, s, pool);
  // The queries before RoPE of the sequences whose policy reads them (expected-attention), with
  // the rotation the policy averages over future positions.
  s.attn.any_q_pre = false;
  for (const SequenceRun& run : s.runs) {
    bool wants = run.state->needs_queries();
    for (const kv::MultiState* f : run.followers) wants |= f->needs_queries();
    if (!wants) continue;
    if (!s.attn.any_q_pre) {
      resize(s.attn.q_pre, static_cast<size_t>(n) * q_dim);
      kv::QueryRope& r = s.attn.query_rope;
      r.head_dim = d.head_dim;
      r.n_rot = rope.n_rot;
      r.neox = rope.mode == kernels::RopeMode::kNeox;
      // The policy rotates pre-RoPE queries against stored keys that already carry their
      // YaRN mscale: the query's own mscale goes into the logit scale.
      r.scale = (c.attn_scale > 0.f ? c.attn_scale : 1.0 / std::sqrt(static_cast<double>(d.head_dim))) *
                static_cast<double>(rope.mscale);
      r.theta.resize(rope.n_rot / 2);
      // theta_i as kernels::rope_cos_sin computes it, per unit of position.
      kernels::rope_thetas(rope, r.theta.data());
      r.sinks.assign(sinks.begin(), sinks.end());
      s.attn.any_q_pre = true;
    }
    for (const int i : run.idx) {
      std::copy_n(&s.attn.q[i * q_dim], q_dim, &s.attn.q_pre[i * q_dim]);
    }
  }
  // Sequences in a mode that moves positions keep q and k before RoPE here: attention rotates
  // them by their mapped positions.
  for (const SequenceRun& run : s.runs) {
    if (nope || kv::moves_positions(run.state->positions())) continue;
    for_tokens(pool, static_cast<int64_t>(run.idx.size()), q_dim + kv_dim, [&](int64_t j) {
      const int i = run.idx[j];
      const float* cs = &s.attn.rope_cs[i * rope.n_rot];
      kernels::rope_apply(&s.attn.q[i * q_dim], d.n_head, d.head_dim, cs, rope);
      kernels::rope_apply(&s.attn.k[i * kv_dim], d.n_head_kv, d.head_dim, cs, rope);
    });
  }
  auto convert = [&](std::vector<AttentionScratch::Converted>& conv, const std::vector<float>& x,
                     std::vector<kv::StoredRows>& stored) {
    stored.clear();
    for (AttentionScratch::Converted& cv : conv) {
      if (!cv.active) continue;
      const size_t bytes = static_cast<size_t>(n) * d.n_head_kv * kv_row_bytes(cv.type, d.head_dim);
      if (cv.type == KvType::kF32) {
        stored.push_back({.type = cv.type, .data = reinterpret_cast<const uint8_t*>(x.data())});
        continue;
      }
      if (cv.rows.size() < bytes) cv.rows.resize(bytes);
      const size_t token_bytes = d.n_head_kv * kv_row_bytes(cv.type, d.head_dim);
      for_tokens(pool, n, kv_dim, [&](int64_t i) {
        kernels::kv_store_rows(cv.type, cv.rotated, x.data() + i * kv_dim,
                               cv.rows.data() + i * token_bytes, d.n_head_kv, d.head_dim);
      });
      stored.push_back({.type = cv.type, .rotated = cv.rotated, .data = cv.rows.data()});
    }
  };
  convert(s.attn.conv_k, s.attn.k, s.attn.stored_k);
  convert(s.attn.conv_v, s.attn.v, s.attn.stored_v);
}

// Attention of layer il for every sequence of the batch: kv::step_layer orders each
// sequence's step, SequenceAttention computes it.
// evict: false for a layer whose K/V later shared layers read (Model::forward ends its step).
void attend_layer(const ModelConfig& c, const AttnDims& d, int il, const LayerWeights& L,
                  const kernels::RopeParams& rope, ForwardScratch& s, ThreadPool& pool,
                  bool evict) {
  prepare_moved_positions(rope, s);
  prepare_rows(c, d, rope, L.attn_sinks, s, pool);
  const SequenceAttention::Shape shape{
      .n_head = d.n_head,
      .n_head_kv = d.n_head_kv,
      .head_dim = d.head_dim,
      .scale = c.attn_scale > 0.f ? c.attn_scale : 1.f / std::sqrt(static_cast<float>(d.head_dim)),
      .softcap = c.attn_softcap,
      .sinks = L.attn_sinks.empty() ? nullptr : L.attn_sinks.data()};
  const kv::StepRows rows_of_batch{.pos = s.pos.data(),
                                   .k = s.attn.k.data(),
                                   .v = s.attn.v.data(),
                                   .stored_k = s.attn.stored_k,
                                   .stored_v = s.attn.stored_v,
                                   .kv_dim = d.n_head_kv * d.head_dim,
                                   .q_pre = s.attn.any_q_pre ? s.attn.q_pre.data() : nullptr,
                                   .q_dim = d.n_head * d.head_dim,
                                   .rope = s.attn.any_q_pre ? &s.attn.query_rope : nullptr};
  if (s.attn.per_thread.size() < static_cast<size_t>(pool.size())) s.attn.per_thread.resize(pool.size());
  auto step = [&](const SequenceRun& run, AttendScratch& mine, ThreadPool* run_pool) {
    kv::StepRows rows = rows_of_batch;
    rows.idx = run.idx;
    rows.whole = run.whole;
    const kv::PositionMode mode =
        rope.n_rot == 0 ? kv::PositionMode::kAbsolute : run.state->positions();
    SequenceAttention attention(shape, rope, mode, run.idx, s, mine, run_pool);
    kv::step_layer(*run.state, run.followers, il, rows, d.n_head, attention, mine.step, evict);
  };

  if (s.runs.size() == 1) {
    step(s.runs[0], s.attn.per_thread[0], pool.size() > 1 ? &pool : nullptr);
    return;
  }
  // Sequences differ widely in cost (budgets, full caches, scoring): hand them out one at a
  // time, costliest first, so no thread idles while another works through a long list.
  s.attn.order.clear();
  for (int r = 0; r < static_cast<int>(s.runs.size()); ++r) {
    const int64_t held = s.runs[r].state->layer(il).n_held();
    const int64_t n_tok = static_cast<int64_t>(s.runs[r].idx.size());
    s.attn.order.emplace_back(-(held + n_tok) * n_tok, r);
  }
  std::sort(s.attn.order.begin(), s.attn.order.end());
  pool.for_each_dynamic(static_cast<int64_t>(s.attn.order.size()), [&](int64_t j, int thread) {
    step(s.runs[s.attn.order[j].second], s.attn.per_thread[thread], nullptr);
  });
}

}  // namespace

void attend_over_owner(const LayerPass& p, int ia, int n_head_kv, int head_dim,
                       const kernels::RopeParams& rope) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  ThreadPool& pool = p.pool;
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * head_dim;
  resize(s.attn.att, p.n * q_dim);
  prepare_moved_positions(rope, s);
  prepare_rope_table(rope, s, pool);
  // The queries at their positions, where the pool keeps rotated keys (else attention rotates
  // both by their mapped positions).
  for (const SequenceRun& run : s.runs) {
    if (rope.n_rot == 0 || kv::moves_positions(run.state->positions())) continue;
    for_tokens(pool, static_cast<int64_t>(run.idx.size()), q_dim, [&](int64_t j) {
      const int i = run.idx[j];
      kernels::rope_apply(&s.attn.q[i * q_dim], c.n_head, head_dim, &s.attn.rope_cs[i * rope.n_rot], rope);
    });
  }
  const SequenceAttention::Shape shape{
      .n_head = c.n_head,
      .n_head_kv = n_head_kv,
      .head_dim = head_dim,
      .scale = c.attn_scale > 0.f ? c.attn_scale : 1.f / std::sqrt(static_cast<float>(head_dim)),
      .softcap = c.attn_softcap,
      .sinks = nullptr};
  if (s.attn.per_thread.size() < static_cast<size_t>(pool.size())) s.attn.per_thread.resize(pool.size());
  // What the owner held for each token of the step: every token joined, nothing evicted yet
  // (its step ends after the shared layers, kv::end_step); the causal and window masks hide
  // the rest. Followers hold the same states as their leader: nothing of theirs to compute.
  auto attend = [&](const SequenceRun& run, AttendScratch& mine, ThreadPool* run_pool) {
    const kv::LayerState& L = run.state->layer(ia);
    TOVA_CHECK(L.n_head_kv() == n_head_kv && L.head_dim() == head_dim);
    const kv::PositionMode mode =
        rope.n_rot == 0 ? kv::PositionMode::kAbsolute : run.state->positions();
    SequenceAttention attention(shape, rope, mode, run.idx, s, mine, run_pool);
    attention.joined(L);
    attention.attend_many(L, 0, static_cast<int>(run.idx.size()), nullptr, 0);
  };
  if (s.runs.size() == 1) {
    attend(s.runs[0], s.attn.per_thread[0], pool.size() > 1 ? &pool : nullptr);
    return;
  }
  pool.for_each_dynamic(static_cast<int64_t>(s.runs.size()), [&](int64_t r, int thread) {
    attend(s.runs[r], s.attn.per_thread[thread], nullptr);
  });
}

namespace {

// The projections' biases, then the per-head norms of queries and keys (qwen3) and values
// (Gemma 4), in place in s.attn.q, k and v.
void norm_heads(const LayerPass& p, const LayerWeights& L, const AttnDims& d) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  ThreadPool& pool = p.pool;
  const int64_t n = p.n;
  const int64_t q_dim = static_cast<int64_t>(d.n_head) * d.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(d.n_head_kv) * d.head_dim;
  if (!L.bq.empty()) {
    for_tokens(pool, n, q_dim + 2 * kv_dim, [&](int64_t i) {
      kernels::add(&s.attn.q[i * q_dim], L.bq.data(), q_dim);
      kernels::add(&s.attn.k[i * kv_dim], L.bk.data(), kv_dim);
      kernels::add(&s.attn.v[i * kv_dim], L.bv.data(), kv_dim);
    });
  }
  if (!L.q_norm.empty()) {
    // qwen3: every query and key head is RMS-normalised on its own before RoPE.
    for_tokens(pool, n, q_dim + kv_dim, [&](int64_t i) {
      for (int64_t h = i * d.n_head; h < (i + 1) * d.n_head; ++h) {
        float* q = &s.attn.q[h * d.head_dim];
        kernels::rms_norm(q, L.q_norm.data(), q, d.head_dim, c.rms_eps);
      }
      for (int64_t h = i * d.n_head_kv; h < (i + 1) * d.n_head_kv; ++h) {
        float* k = &s.attn.k[h * d.head_dim];
        kernels::rms_norm(k, L.k_norm.data(), k, d.head_dim, c.rms_eps);
      }
    });
  }
  if (!L.v_norm.empty()) {
    // Gemma 4: every value head RMS-normalised, unweighted (v_norm holds ones).
    for_tokens(pool, n, kv_dim, [&](int64_t i) {
      for (int64_t h = i * d.n_head_kv; h < (i + 1) * d.n_head_kv; ++h) {
        float* v = &s.attn.v[h * d.head_dim];
        kernels::rms_norm(v, L.v_norm.data(), v, d.head_dim, c.rms_eps);
      }
    });
  }
}

// out [n][n_embd] = attn_post_norm(wo · attention(q, k, v of the normed rows h) + bo): the
// attention mixer's output before the residual add (h may be out: read before out is written).
void attention_mix(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L,
                   const float* h, float* out) {
  const ModelConfig& c = p.c;
  const kernels::RopeParams rope = p.rope_of(il);
  const int ia = lp.state;
  ForwardScratch& s = p.s;
  ThreadPool& pool = p.pool;
  const int64_t n = p.n;
  const AttnDims d{.n_head = c.n_head,
                   .n_head_kv = c.layer_n_head_kv.empty() ? c.n_head_kv : c.layer_n_head_kv[il],
                   .head_dim = c.layer_head_dim.empty() ? c.head_dim : c.layer_head_dim[il]};
  const int64_t q_dim = static_cast<int64_t>(d.n_head) * d.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(d.n_head_kv) * d.head_dim;
  resize(s.attn.q, n * q_dim);
  resize(s.attn.k, n * kv_dim);
  resize(s.attn.v, n * kv_dim);
  resize(s.attn.att, n * q_dim);
  const kernels::WeightMatrix* qkv[] = {&L.wq, &L.wk, &L.wv};
  float* qkv_out[] = {s.attn.q.data(), s.attn.k.data(), s.attn.v.data()};
  if (L.q_gate) {
    resize(s.attn.q_gated, 2 * n * q_dim);
    resize(s.attn.gate, n * q_dim);
    qkv_out[0] = s.attn.q_gated.data();
  }
  const size_t n_proj = L.v_is_k ? 2 : 3;
  p.matmul_multi(std::span(qkv, n_proj), h, n, std::span(qkv_out, n_proj));
  // Gemma 4's global layers: the values are the keys as projected, before the key norm.
  if (L.v_is_k) std::copy_n(s.attn.k.data(), n * kv_dim, s.attn.v.data());
  if (L.q_gate) {
    // qwen35: per head, head_dim query rows then head_dim gate rows.
    for_tokens(pool, n, 2 * q_dim, [&](int64_t i) {
      for (int64_t h = i * d.n_head; h < (i + 1) * d.n_head; ++h) {
        const float* qg = &s.attn.q_gated[2 * h * d.head_dim];
        std::copy_n(qg, d.head_dim, &s.attn.q[h * d.head_dim]);
        std::copy_n(qg + d.head_dim, d.head_dim, &s.attn.gate[h * d.head_dim]);
      }
    });
  }
  norm_heads(p, L, d);
  attend_layer(c, d, ia, L, rope, s, pool, !c.kv_shared_later(il));
  if (L.q_gate) {
    for_tokens(pool, n, q_dim, [&](int64_t i) {
      float* att = &s.attn.att[i * q_dim];
      const float* gate = &s.attn.gate[i * q_dim];
      for (int64_t j = 0; j < q_dim; ++j) att[j] *= 1.f / (1.f + std::exp(-gate[j]));
    });
  }
  p.matmul(L.wo, s.attn.att.data(), n, out);
  if (L.bo.empty() && L.attn_post_norm.empty()) return;
  for_tokens(pool, n, c.n_embd, [&](int64_t i) {
    float* o = &out[i * c.n_embd];
    if (!L.bo.empty()) kernels::add(o, L.bo.data(), c.n_embd);
    if (!L.attn_post_norm.empty()) {
      kernels::rms_norm(o, L.attn_post_norm.data(), o, c.n_embd, c.rms_eps);
    }
  });
}

}  // namespace

void attention_block(const LayerPass& p, int il, const LayerPlan& lp, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  const int64_t n = p.n;
  resize(s.xb, n * c.n_embd);
  for_tokens(p.pool, n, c.n_embd, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * c.n_embd], L.attn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                      c.rms_eps);
  });
  attention_mix(p, il, lp, L, s.xb.data(), s.xb.data());
  for_tokens(p.pool, n, c.n_embd,
             [&](int64_t i) { p.add_residual(&s.x[i * c.n_embd], &s.xb[i * c.n_embd]); });
}

extern const MixerSpec kMixerAttention{.kind = MixerKind::kAttention,
                                       .name = "attention",
                                       .holds = MixerState::kKv,
                                       .block = attention_block,
                                       .mix = attention_mix};

}  // namespace tova::model
