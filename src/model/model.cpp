#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
#include "core/half.h"
#include "kernels/attention.h"
#include "kernels/kv_rows.h"
#include "kernels/matmul_f32act.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kv/layer_step.h"

namespace tova::model {

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const ModelOptions& options) {
  TOVA_ASSIGN_OR_RETURN(std::unique_ptr<io::GgufFile> file,
                        io::GgufFile::open(path, options.mmap ? io::GgufFile::Load::kMap
                                                              : io::GgufFile::Load::kRead));
  return from_file(std::move(file), options);
}

Result<std::unique_ptr<Model>> Model::from_file(std::unique_ptr<io::GgufFile> file,
                                                const ModelOptions& options) {
  if (file == nullptr) return make_error("Model::from_file: no file");
  auto m = std::unique_ptr<Model>(new Model());
  m->options_ = options;
  m->file_ = std::move(file);
  TOVA_ASSIGN_OR_RETURN(m->config_, load_config(*m->file_));
  TOVA_ASSIGN_OR_RETURN(m->weights_, load_weights(*m->file_, m->config_));
  return m;
}

kv::MultiStateOptions Model::state_options(const kv::PolicySpec& policy, const KvFormat& kv_type,
                                           int max_new) const {
  return kv::MultiStateOptions{.n_layer = config_.n_layer,
                               .n_head = config_.n_head,
                               .n_head_kv = config_.n_head_kv,
                               .head_dim = config_.head_dim,
                               .policy = policy,
                               .kv_type = kv_type,
                               .max_new = max_new,
                               .windows = config_.layer_window};
}

void Model::matmul(const kernels::WeightMatrix& w, const float* x, int64_t n_tok, float* y,
                   ThreadPool& pool) const {
  if (options_.f32_activations) {
    kernels::matmul_f32_activations(w, x, n_tok, y, pool);
  } else {
    kernels::matmul(w, x, n_tok, y, pool);
  }
}

void Model::matmul_multi(std::span<const kernels::WeightMatrix* const> ws, const float* x,
                         int64_t n_tok, std::span<float* const> ys, ThreadPool& pool) const {
  if (options_.f32_activations) {
    for (size_t i = 0; i < ws.size(); ++i) matmul(*ws[i], x, n_tok, ys[i], pool);
  } else {
    kernels::matmul_multi(ws, x, n_tok, ys, pool);
  }
}

namespace {

bool same_rope(const kernels::RopeParams& a, const kernels::RopeParams& b) {
  return a.n_rot == b.n_rot && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.mode == b.mode && a.freq_factors == b.freq_factors;
}

void resize(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Element counts below which the per-token work of a forward pass (norms, residual adds, RoPE,
// SiLU) stays on the calling thread: waking the pool costs a few microseconds, a norm of one
// 2048-wide row well under one. In a prompt of hundreds of tokens these parts, left serial,
// were what kept two threads from 2x (docs/PERFORMANCE.md).
constexpr int64_t kMinParallelElems = int64_t{1} << 15;

// fn(i) for every token i < n, over the pool when n tokens of `elems` floats each are enough.
template <typename Fn>
void for_tokens(ThreadPool& pool, int64_t n, int64_t elems, Fn&& fn) {
  if (pool.size() == 1 || n < 2 || n * elems < kMinParallelElems) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) fn(i);
  });
}

// fn(begin, end) over [0, n) elements, split over the pool in ranges of multiples of 64.
template <typename Fn>
void for_elems(ThreadPool& pool, int64_t n, Fn&& fn) {
  if (pool.size() == 1 || n < kMinParallelElems) {
    fn(int64_t{0}, n);
    return;
  }
  pool.parallel_for(n, 64, [&](int64_t b, int64_t e) { fn(b, e); });
}

// Groups the batch by sequence, in order of first appearance.
void group_by_sequence(std::span<const BatchToken> batch, std::vector<SequenceRun>& runs) {
  runs.clear();
  for (int i = 0; i < static_cast<int>(batch.size()); ++i) {
    // A sequence's tokens usually sit together: try the latest run first.
    auto it = !runs.empty() && runs.back().state == batch[i].state
                  ? runs.end() - 1
                  : std::find_if(runs.begin(), runs.end(),
                                 [&](const SequenceRun& r) { return r.state == batch[i].state; });
    if (it == runs.end()) {
      runs.push_back({batch[i].state, {i}});
    } else {
      it->idx.push_back(i);
    }
  }
}

// Attaches each follower to its leader's run, after checking that riding along is exact: the
// follower is at the leader's position, neither is chunked, and neither evicts in this batch.
Status attach_followers(std::span<const Follower> followers, std::vector<SequenceRun>& runs) {
  for (const Follower& f : followers) {
    if (f.leader == nullptr || f.state == nullptr || f.leader == f.state) {
      return make_error("a follower needs a leader and a state of its own");
    }
    auto is = [](const kv::MultiState* st) {
      return [st](const SequenceRun& r) { return r.state == st; };
    };
    auto lead = std::find_if(runs.begin(), runs.end(), is(f.leader));
    if (lead == runs.end()) return make_error("a follower's leader is not in the batch");
    if (std::find_if(runs.begin(), runs.end(), is(f.state)) != runs.end()) {
      return make_error("a follower has tokens of its own in the batch");
    }
    for (const SequenceRun& r : runs) {
      if (std::find(r.followers.begin(), r.followers.end(), f.state) != r.followers.end()) {
        return make_error("a sequence follows two leaders");
      }
    }
    const int64_t n_after = f.leader->n_seen() + static_cast<int64_t>(lead->idx.size());
    if (f.state->n_layer() != f.leader->n_layer() || f.state->n_seen() != f.leader->n_seen() ||
        f.state->max_new() != 1 || f.leader->max_new() != 1 ||
        n_after > f.state->holds_all_until() || n_after > f.leader->holds_all_until()) {
      return make_error(
          "a follower must be exact, at its leader's position, and hold every token of the "
          "batch without evicting (follower at {}, leader at {}, {} tokens)",
          f.state->n_seen(), f.leader->n_seen(), lead->idx.size());
    }
    if (f.state->positions() != f.leader->positions()) {
      return make_error("a follower must use its leader's position mode ({} vs {})",
                        kv::position_mode_name(f.state->positions()),
                        kv::position_mode_name(f.leader->positions()));
    }
    lead->followers.push_back(f.state);
  }
  return ok_status();
}

using AttendScratch = ForwardScratch::AttendScratch;

// The attention arithmetic of one sequence at the points kv::step_layer gives it.
class SequenceAttention final : public kv::StepAttention {
 public:
  struct Shape {
    int n_head, n_head_kv, head_dim;
    float scale, softcap;
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
                   s_.per_thread[thread], nullptr);
    });
  }

 private:
  static constexpr int64_t kMinSplitWork = int64_t{1} << 16;

  // Token t's attention with mine's buffers, its heads and slots split over heads_pool if given.
  void attend_token(const kv::LayerState& L, int t, float* probs, AttendScratch& mine,
                    ThreadPool* heads_pool) const {
    const int i = idx_[t];
    const size_t q_dim = static_cast<size_t>(shape_.n_head) * shape_.head_dim;
    const float* q = &s_.q[i * q_dim];
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
                                   .max_pos = s_.pos[i],
                                   .min_pos = L.min_visible(s_.pos[i]),
                                   .scale = shape_.scale,
                                   .softcap = shape_.softcap,
                                   .out = &s_.att[i * q_dim],
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
    return {s_.moved_cs.data(), static_cast<size_t>(s_.moved_cs_n) * rope_.n_rot};
  }

  Shape shape_;
  const kernels::RopeParams& rope_;
  kv::PositionMode mode_;
  std::span<const int> idx_;
  ForwardScratch& s_;
  AttendScratch& mine_;
  ThreadPool* pool_;
};

}  // namespace

// Sizes the cos/sin table of mapped positions for the batch's sequences in modes that move
// positions (before threads share it read-only).
void Model::prepare_moved_positions(const kernels::RopeParams& rope, ForwardScratch& s) const {
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
  if (s.moved_cs_n > 0 && !same_rope(s.moved_cs_params, rope)) s.moved_cs_n = 0;
  if (need > s.moved_cs_n) {
    resize(s.moved_cs, static_cast<size_t>(need) * rope.n_rot);
    for (int64_t m = s.moved_cs_n; m < need; ++m) {
      kernels::rope_cos_sin(m, rope, &s.moved_cs[static_cast<size_t>(m) * rope.n_rot]);
    }
    s.moved_cs_n = need;
    s.moved_cs_params = rope;
  }
}

// RoPE at each token's position, for the sequences whose pools keep rotated keys; the
// cos/sin table is computed once per forward call and reused by every layer that shares the
// same rope parameters. Then the batch's new keys and values converted once into each storage
// type a pool of the batch uses (f32 pools read them as they are), token by token over the pool.
void Model::prepare_rows(const kernels::RopeParams& rope, ForwardScratch& s,
                         ThreadPool& pool) const {
  const ModelConfig& c = config_;
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  const int64_t n = static_cast<int64_t>(s.pos.size());
  if (!s.rope_cs_valid || !same_rope(s.rope_cs_params, rope)) {
    resize(s.rope_cs, n * rope.n_rot);
    // n_rot / 2 sines and cosines in double per token: the costliest part of RoPE.
    for_tokens(pool, n, 16 * rope.n_rot,
               [&](int64_t i) { kernels::rope_cos_sin(s.pos[i], rope, &s.rope_cs[i * rope.n_rot]); });
    s.rope_cs_params = rope;
    s.rope_cs_valid = true;
  }
  // The queries before RoPE of the sequences whose policy reads them (expected-attention), with
  // the rotation the policy averages over future positions.
  s.any_q_pre = false;
  for (const SequenceRun& run : s.runs) {
    bool wants = run.state->needs_queries();
    for (const kv::MultiState* f : run.followers) wants |= f->needs_queries();
    if (!wants) continue;
    if (!s.any_q_pre) {
      resize(s.q_pre, static_cast<size_t>(n) * q_dim);
      kv::QueryRope& r = s.query_rope;
      r.head_dim = c.head_dim;
      r.n_rot = rope.n_rot;
      r.neox = rope.mode == kernels::RopeMode::kNeox;
      r.scale = c.attn_scale > 0.f ? c.attn_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim));
      r.theta.resize(rope.n_rot / 2);
      // theta_i as kernels::rope_cos_sin computes it, per unit of position.
      for (int i = 0; i < rope.n_rot / 2; ++i) {
        double th = static_cast<double>(rope.freq_scale) *
                    std::pow(static_cast<double>(rope.freq_base), -2.0 * i / rope.n_rot);
        if (rope.freq_factors != nullptr) th /= static_cast<double>(rope.freq_factors[i]);
        r.theta[i] = th;
      }
      s.any_q_pre = true;
    }
    for (const int i : run.idx) {
      std::copy_n(&s.q[i * q_dim], q_dim, &s.q_pre[i * q_dim]);
    }
  }
  // Sequences in a mode that moves positions keep q and k before RoPE here: attention rotates
  // them by their mapped positions.
  for (const SequenceRun& run : s.runs) {
    if (kv::moves_positions(run.state->positions())) continue;
    for_tokens(pool, static_cast<int64_t>(run.idx.size()), q_dim + kv_dim, [&](int64_t j) {
      const int i = run.idx[j];
      const float* cs = &s.rope_cs[i * rope.n_rot];
      kernels::rope_apply(&s.q[i * q_dim], c.n_head, c.head_dim, cs, rope);
      kernels::rope_apply(&s.k[i * kv_dim], c.n_head_kv, c.head_dim, cs, rope);
    });
  }
  auto convert = [&](std::vector<ForwardScratch::Converted>& conv, const std::vector<float>& x,
                     std::vector<kv::StoredRows>& stored) {
    stored.clear();
    for (ForwardScratch::Converted& cv : conv) {
      if (!cv.active) continue;
      const size_t bytes = static_cast<size_t>(n) * c.n_head_kv * kv_row_bytes(cv.type, c.head_dim);
      if (cv.type == KvType::kF32) {
        stored.push_back({.type = cv.type, .data = reinterpret_cast<const uint8_t*>(x.data())});
        continue;
      }
      if (cv.rows.size() < bytes) cv.rows.resize(bytes);
      const size_t token_bytes = c.n_head_kv * kv_row_bytes(cv.type, c.head_dim);
      for_tokens(pool, n, kv_dim, [&](int64_t i) {
        kernels::kv_store_rows(cv.type, cv.rotated, x.data() + i * kv_dim,
                               cv.rows.data() + i * token_bytes, c.n_head_kv, c.head_dim);
      });
      stored.push_back({.type = cv.type, .rotated = cv.rotated, .data = cv.rows.data()});
    }
  };
  convert(s.conv_k, s.k, s.stored_k);
  convert(s.conv_v, s.v, s.stored_v);
}

// Attention of layer il for every sequence of the batch: kv::step_layer orders each
// sequence's step, SequenceAttention computes it.
void Model::attend_layer(int il, const kernels::RopeParams& rope, ForwardScratch& s,
                         ThreadPool& pool) const {
  const ModelConfig& c = config_;
  prepare_moved_positions(rope, s);
  prepare_rows(rope, s, pool);
  const SequenceAttention::Shape shape{
      .n_head = c.n_head,
      .n_head_kv = c.n_head_kv,
      .head_dim = c.head_dim,
      .scale = c.attn_scale > 0.f ? c.attn_scale : 1.f / std::sqrt(static_cast<float>(c.head_dim)),
      .softcap = c.attn_softcap};
  const kv::StepRows rows_of_batch{.pos = s.pos.data(),
                                   .k = s.k.data(),
                                   .v = s.v.data(),
                                   .stored_k = s.stored_k,
                                   .stored_v = s.stored_v,
                                   .kv_dim = c.n_head_kv * c.head_dim,
                                   .q_pre = s.any_q_pre ? s.q_pre.data() : nullptr,
                                   .q_dim = c.n_head * c.head_dim,
                                   .rope = s.any_q_pre ? &s.query_rope : nullptr};
  if (s.per_thread.size() < static_cast<size_t>(pool.size())) s.per_thread.resize(pool.size());
  auto step = [&](const SequenceRun& run, AttendScratch& mine, ThreadPool* run_pool) {
    kv::StepRows rows = rows_of_batch;
    rows.idx = run.idx;
    SequenceAttention attention(shape, rope, run.state->positions(), run.idx, s, mine, run_pool);
    kv::step_layer(*run.state, run.followers, il, rows, c.n_head, attention, mine.step);
  };

  if (s.runs.size() == 1) {
    step(s.runs[0], s.per_thread[0], pool.size() > 1 ? &pool : nullptr);
    return;
  }
  // Sequences differ widely in cost (budgets, full caches, scoring): hand them out one at a
  // time, costliest first, so no thread idles while another works through a long list.
  s.order.clear();
  for (int r = 0; r < static_cast<int>(s.runs.size()); ++r) {
    const int64_t held = s.runs[r].state->layer(il).n_held();
    const int64_t n_tok = static_cast<int64_t>(s.runs[r].idx.size());
    s.order.emplace_back(-(held + n_tok) * n_tok, r);
  }
  std::sort(s.order.begin(), s.order.end());
  pool.for_each_dynamic(static_cast<int64_t>(s.order.size()), [&](int64_t j, int thread) {
    step(s.runs[s.order[j].second], s.per_thread[thread], nullptr);
  });
}

Status Model::forward(std::span<const BatchToken> batch, ThreadPool& pool, ForwardScratch& s,
                      float* logits, std::span<const Follower> followers) const {
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  const int64_t n = static_cast<int64_t>(batch.size());
  if (n == 0) return ok_status();
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  for (const BatchToken& t : batch) {
    if (t.token < 0 || t.token >= c.n_vocab) {
      return make_error("token id {} is outside the vocabulary (0..{})", t.token, c.n_vocab - 1);
    }
    if (t.state == nullptr || t.state->n_layer() != c.n_layer) {
      return make_error("batch token without a multi-state of this model");
    }
  }
  group_by_sequence(batch, s.runs);
  for (const SequenceRun& run : s.runs) {
    if (run.state->budget() >= 0 && run.state->max_new() > 1 &&
        static_cast<int>(run.idx.size()) > run.state->max_new()) {
      return make_error("a chunk of {} tokens exceeds the sequence's prefill chunk size {}",
                        run.idx.size(), run.state->max_new());
    }
  }
  TOVA_RETURN_IF_ERROR(attach_followers(followers, s.runs));
  // Pools that cannot take this step's tokens grow now, before any layer runs: never inside a
  // step (where an allocation failure could not be reported), and an error if memory is short.
  for (const SequenceRun& run : s.runs) {
    const int n_new = static_cast<int>(run.idx.size());
    TOVA_RETURN_IF_ERROR(run.state->make_room(n_new));
    for (kv::MultiState* f : run.followers) TOVA_RETURN_IF_ERROR(f->make_room(n_new));
  }
  // The storage types of the batch's pools (keys and values apart), each converted once per
  // layer in prepare_rows.
  for (auto* conv : {&s.conv_k, &s.conv_v}) {
    for (ForwardScratch::Converted& cv : *conv) cv.active = false;
  }
  auto want = [](std::vector<ForwardScratch::Converted>& conv, KvType t, bool rotated) {
    for (ForwardScratch::Converted& cv : conv) {
      if (cv.type == t && cv.rotated == rotated) {
        cv.active = true;
        return;
      }
    }
    conv.push_back({.type = t, .rotated = rotated, .active = true});
  };
  auto want_state = [&](const kv::MultiState& st) {
    const KvFormat& f = st.kv_type();
    want(s.conv_k, f.k, f.rotate && kv_quantized(f.k));
    want(s.conv_v, f.v, f.rotate && kv_quantized(f.v));
  };
  for (const SequenceRun& run : s.runs) {
    want_state(*run.state);
    for (const kv::MultiState* f : run.followers) want_state(*f);
  }
  resize(s.x, n * c.n_embd);
  resize(s.xb, n * c.n_embd);
  resize(s.q, n * q_dim);
  resize(s.k, n * kv_dim);
  resize(s.v, n * kv_dim);
  resize(s.att, n * q_dim);
  resize(s.hb, n * c.n_ff);
  resize(s.hb2, n * c.n_ff);
  s.pos.resize(n);
  s.rope_cs_valid = false;  // positions change with every call

  // Positions: each token takes the next position of its own sequence.
  {
    std::vector<std::pair<kv::MultiState*, int64_t>> next;
    for (int64_t i = 0; i < n; ++i) {
      auto it = std::find_if(next.begin(), next.end(),
                             [&](const auto& p) { return p.first == batch[i].state; });
      if (it == next.end()) {
        next.emplace_back(batch[i].state, batch[i].state->n_seen());
        it = next.end() - 1;
      }
      s.pos[i] = it->second++;
    }
  }

  // Embeddings.
  for_tokens(pool, n, c.n_embd, [&](int64_t i) {
    kernels::dequantize_row(w.token_embd.type,
                            w.token_embd.data + w.token_embd.row_bytes * batch[i].token,
                            &s.x[i * c.n_embd], c.n_embd);
    if (c.embd_scale != 1.f) kernels::scale(&s.x[i * c.n_embd], c.embd_scale, c.n_embd);
  });

  kernels::RopeParams rope = c.rope;
  if (!w.rope_freqs.empty()) rope.freq_factors = w.rope_freqs.data();
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[il];
    const bool window_layer = !c.layer_window.empty() && c.layer_window[il] > 0;
    for_tokens(pool, n, c.n_embd, [&](int64_t i) {
      kernels::rms_norm(&s.x[i * c.n_embd], L.attn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                        c.rms_eps);
    });
    const kernels::WeightMatrix* qkv[] = {&L.wq, &L.wk, &L.wv};
    float* qkv_out[] = {s.q.data(), s.k.data(), s.v.data()};
    matmul_multi(qkv, s.xb.data(), n, qkv_out, pool);
    if (!L.bq.empty()) {
      for_tokens(pool, n, q_dim + 2 * kv_dim, [&](int64_t i) {
        kernels::add(&s.q[i * q_dim], L.bq.data(), q_dim);
        kernels::add(&s.k[i * kv_dim], L.bk.data(), kv_dim);
        kernels::add(&s.v[i * kv_dim], L.bv.data(), kv_dim);
      });
    }
    if (!L.q_norm.empty()) {
      // qwen3: every query and key head is RMS-normalised on its own before RoPE.
      for_tokens(pool, n, q_dim + kv_dim, [&](int64_t i) {
        for (int64_t h = i * c.n_head; h < (i + 1) * c.n_head; ++h) {
          float* q = &s.q[h * c.head_dim];
          kernels::rms_norm(q, L.q_norm.data(), q, c.head_dim, c.rms_eps);
        }
        for (int64_t h = i * c.n_head_kv; h < (i + 1) * c.n_head_kv; ++h) {
          float* k = &s.k[h * c.head_dim];
          kernels::rms_norm(k, L.k_norm.data(), k, c.head_dim, c.rms_eps);
        }
      });
    }
    attend_layer(il, window_layer ? c.rope_window : rope, s, pool);
    matmul(L.wo, s.att.data(), n, s.xb.data(), pool);
    for_tokens(pool, n, c.n_embd, [&](int64_t i) {
      float* xb = &s.xb[i * c.n_embd];
      if (!L.attn_post_norm.empty()) {
        kernels::rms_norm(xb, L.attn_post_norm.data(), xb, c.n_embd, c.rms_eps);
      }
      kernels::add(&s.x[i * c.n_embd], xb, c.n_embd);
      kernels::rms_norm(&s.x[i * c.n_embd], L.ffn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                        c.rms_eps);
    });
    const kernels::WeightMatrix* gate_up[] = {&L.w_gate, &L.w_up};
    float* gate_up_out[] = {s.hb.data(), s.hb2.data()};
    matmul_multi(gate_up, s.xb.data(), n, gate_up_out, pool);
    for_elems(pool, n * c.n_ff, [&](int64_t b, int64_t e) {
      if (c.ffn_act == FfnAct::kGeluTanh) {
        kernels::gelu_mul(s.hb.data() + b, s.hb2.data() + b, e - b);
      } else {
        kernels::silu_mul(s.hb.data() + b, s.hb2.data() + b, e - b);
      }
    });
    matmul(L.w_down, s.hb.data(), n, s.xb.data(), pool);
    for_tokens(pool, n, c.n_embd, [&](int64_t i) {
      float* xb = &s.xb[i * c.n_embd];
      if (!L.ffn_post_norm.empty()) {
        kernels::rms_norm(xb, L.ffn_post_norm.data(), xb, c.n_embd, c.rms_eps);
      }
      kernels::add(&s.x[i * c.n_embd], xb, c.n_embd);
    });
  }

  // Advance every sequence by the tokens it contributed.
  for (const SequenceRun& run : s.runs) {
    run.state->advance(static_cast<int64_t>(run.idx.size()));
    for (kv::MultiState* f : run.followers) f->advance(static_cast<int64_t>(run.idx.size()));
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
  if (n_out > 0) matmul(w.output, s.logit_in.data(), n_out, logits, pool);
  if (n_out > 0 && c.final_softcap > 0.f)
    kernels::softcap(logits, n_out * c.n_vocab, c.final_softcap);
  return ok_status();
}

}  // namespace tova::model
