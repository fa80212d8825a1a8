#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
#include "core/half.h"
#include "kernels/attention.h"
#include "kernels/matmul_f32act.h"
#include "kernels/ops.h"
#include "kernels/quant.h"

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

kv::MultiStateOptions Model::state_options(const kv::PolicySpec& policy, kv::KvType kv_type,
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

// cos/sin of mapped position m in the table prepare_moved_positions filled.
const float* moved_cs_at(const ForwardScratch& s, int64_t m, const kernels::RopeParams& rope) {
  TOVA_CHECK(m >= 0 && m < s.moved_cs_n);
  return &s.moved_cs[static_cast<size_t>(m) * rope.n_rot];
}

}  // namespace

// One layer of one sequence in a mode that moves positions: its held keys rotated by their
// mapped positions at this step (the pool keeps them before RoPE).
struct Model::MovedKeys {
  std::vector<uint8_t> keys;    // [n_head_kv][n_slot][head_dim], the pool's type, post-RoPE
  std::vector<int64_t> mapped;  // [n_head_kv][n_slot], -1 = free
  std::vector<int32_t> order;
  std::vector<float> row, q;

  void rotate_keys(const kv::LayerState& L, kv::PositionMode mode, const kernels::RopeParams& rope,
                   const ForwardScratch& s) {
    const int n_slot = L.n_slot(), hd = L.head_dim();
    const bool f16 = L.kv_type() == kv::KvType::kF16;
    const size_t elem = f16 ? 2 : 4;
    mapped.resize(static_cast<size_t>(L.n_head_kv()) * n_slot);
    keys.resize(mapped.size() * hd * elem);
    row.resize(hd);
    for (int g = 0; g < L.n_head_kv(); ++g) {
      const size_t base = static_cast<size_t>(g) * n_slot;
      kv::map_slot_positions(mode, {L.pos() + base, static_cast<size_t>(n_slot)},
                             {&mapped[base], static_cast<size_t>(n_slot)}, order);
      for (int32_t sl : order) {  // the held slots
        const size_t off = (base + sl) * hd;
        const float* cs = moved_cs_at(s, mapped[base + sl], rope);
        if (!f16) {
          float* dst = reinterpret_cast<float*>(keys.data()) + off;
          std::copy_n(static_cast<const float*>(L.keys()) + off, hd, dst);
          kernels::rope_apply(dst, 1, hd, cs, rope);
        } else {
          const uint16_t* src = static_cast<const uint16_t*>(L.keys()) + off;
          for (int d = 0; d < hd; ++d) row[d] = fp16_to_fp32(src[d]);
          kernels::rope_apply(row.data(), 1, hd, cs, rope);
          kernels::fp32_to_fp16_row(row.data(), reinterpret_cast<uint16_t*>(keys.data()) + off, hd);
        }
      }
    }
  }

  // The query of the state at original position p, each head rotated by the mapped position
  // that state has in its KV head (head-wise policies hold different states per KV head).
  const float* rotate_query(const kv::LayerState& L, const float* q_in, int64_t p,
                            const ModelConfig& c, const kernels::RopeParams& rope,
                            const ForwardScratch& s) {
    const int n_slot = L.n_slot();
    const int group = c.n_head / c.n_head_kv;
    q.assign(q_in, q_in + static_cast<size_t>(c.n_head) * c.head_dim);
    for (int g = 0; g < c.n_head_kv; ++g) {
      const int64_t* pos = L.pos() + static_cast<size_t>(g) * n_slot;
      const int sl = static_cast<int>(std::find(pos, pos + n_slot, p) - pos);
      TOVA_CHECK(sl < n_slot);  // the query's own state joined before it attends
      const float* cs = moved_cs_at(s, mapped[static_cast<size_t>(g) * n_slot + sl], rope);
      kernels::rope_apply(&q[static_cast<size_t>(g) * group * c.head_dim], group, c.head_dim, cs,
                          rope);
    }
    return q.data();
  }
};

// Sizes the cos/sin table of mapped positions for the batch's sequences in modes that move
// positions (before threads share it read-only); false when there are none.
bool Model::prepare_moved_positions(const kernels::RopeParams& rope, ForwardScratch& s) const {
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
  if (!any) return false;
  if (s.moved_cs_n > 0 && !same_rope(s.moved_cs_params, rope)) s.moved_cs_n = 0;
  if (need > s.moved_cs_n) {
    resize(s.moved_cs, static_cast<size_t>(need) * rope.n_rot);
    for (int64_t m = s.moved_cs_n; m < need; ++m) {
      kernels::rope_cos_sin(m, rope, &s.moved_cs[static_cast<size_t>(m) * rope.n_rot]);
    }
    s.moved_cs_n = need;
    s.moved_cs_params = rope;
  }
  return true;
}

// Attention for every token of the batch in layer il, with the per-step semantics of the
// multi-state: join, attend over everything held, then let the policy evict.
void Model::attend_layer(int il, const kernels::RopeParams& rope, ForwardScratch& s,
                         ThreadPool& pool) const {
  const ModelConfig& c = config_;
  const int q_dim = c.n_head * c.head_dim;
  const int kv_dim = c.n_head_kv * c.head_dim;
  const float scale =
      c.attn_scale > 0.f ? c.attn_scale : 1.f / std::sqrt(static_cast<float>(c.head_dim));
  const std::vector<SequenceRun>& runs = s.runs;
  const int64_t n = static_cast<int64_t>(s.pos.size());

  // RoPE at each token's position. The cos/sin table is computed once per forward call and
  // reused by every layer that shares the same rope parameters.
  if (!s.rope_cs_valid || !same_rope(s.rope_cs_params, rope)) {
    resize(s.rope_cs, n * rope.n_rot);
    for (int64_t i = 0; i < n; ++i)
      kernels::rope_cos_sin(s.pos[i], rope, &s.rope_cs[i * rope.n_rot]);
    s.rope_cs_params = rope;
    s.rope_cs_valid = true;
  }
  auto rotate_token = [&](int64_t i) {
    const float* cs = &s.rope_cs[i * rope.n_rot];
    kernels::rope_apply(&s.q[i * q_dim], c.n_head, c.head_dim, cs, rope);
    kernels::rope_apply(&s.k[i * kv_dim], c.n_head_kv, c.head_dim, cs, rope);
  };
  const bool any_moved = prepare_moved_positions(rope, s);
  if (!any_moved) {
    for (int64_t i = 0; i < n; ++i) rotate_token(i);
  } else {
    // Sequences in a mode that moves positions keep q and k before RoPE here: attention
    // rotates them by their mapped positions (MultiStateOptions::positions says why).
    for (const SequenceRun& run : runs) {
      if (kv::moves_positions(run.state->positions())) continue;
      for (int i : run.idx) rotate_token(i);
    }
  }

  auto args_for = [&](const kv::LayerState& L, int i, float* probs, float* scratch, const float* q,
                      const void* k) {
    return kernels::AttentionArgs{.q = q != nullptr ? q : &s.q[static_cast<size_t>(i) * q_dim],
                                  .n_head = c.n_head,
                                  .n_head_kv = c.n_head_kv,
                                  .head_dim = c.head_dim,
                                  .n_slot = L.n_slot(),
                                  .slot_end = L.slot_end(),
                                  .k = k != nullptr ? k : L.keys(),
                                  .v = L.values(),
                                  .kv_f16 = L.kv_type() == kv::KvType::kF16,
                                  .pos = L.pos(),
                                  .max_pos = s.pos[i],
                                  .min_pos = L.min_visible(s.pos[i]),
                                  .scale = scale,
                                  .softcap = c.attn_softcap,
                                  .out = &s.att[static_cast<size_t>(i) * q_dim],
                                  .probs = probs,
                                  .scratch = scratch};
  };

  // Runs one sequence's tokens; `heads_in_parallel` splits each token's heads over the pool
  // (used when the batch holds a single sequence).
  auto run_sequence = [&](const SequenceRun& run, bool heads_in_parallel) {
    kv::MultiState& ms = *run.state;
    kv::LayerState& L = ms.layer(il);
    const bool own_scores = ms.score_need() != kv::ScoreNeed::kNone;
    bool follower_scores = false;
    for (const kv::MultiState* f : run.followers) {
      follower_scores |= f->score_need() != kv::ScoreNeed::kNone;
    }
    const bool scores = own_scores || follower_scores;
    const bool chunked = ms.budget() >= 0 && ms.max_new() > 1;
    const bool moved = kv::moves_positions(ms.positions());
    MovedKeys mk;  // moved position modes: this step's rotated keys and mapped positions
    std::vector<float> probs, scratch, follower_probs;
    std::vector<int32_t> slots(c.n_head_kv), follower_slots(c.n_head_kv);
    std::vector<uint16_t> kv16;  // this token's k and v as f16, converted once with SIMD
    auto insert = [&](int i) {
      const float* k = &s.k[static_cast<size_t>(i) * kv_dim];
      const float* v = &s.v[static_cast<size_t>(i) * kv_dim];
      const bool f16 = L.kv_type() == kv::KvType::kF16;
      if (f16) {
        kv16.resize(static_cast<size_t>(2 * kv_dim));
        kernels::fp32_to_fp16_row(k, kv16.data(), kv_dim);
        kernels::fp32_to_fp16_row(v, kv16.data() + kv_dim, kv_dim);
        L.insert_stored(s.pos[i], kv16.data(), kv16.data() + kv_dim, slots.data());
      } else {
        L.insert(s.pos[i], k, v, slots.data());
      }
      for (kv::MultiState* f : run.followers) {
        // Same tokens in the same order into free stacks that hand out the lowest slot first:
        // the follower's slots match the leader's.
        kv::LayerState& F = f->layer(il);
        if (f16 && F.kv_type() == kv::KvType::kF16) {
          F.insert_stored(s.pos[i], kv16.data(), kv16.data() + kv_dim, follower_slots.data());
        } else {
          F.insert(s.pos[i], k, v, follower_slots.data());
        }
        TOVA_CHECK(follower_slots == slots);
      }
    };
    // The leader's probabilities [n_head][its n_slot] as each follower's policy expects them,
    // [n_head][the follower's n_slot]: every held slot is below both pool sizes.
    auto observe_followers = [&] {
      for (kv::MultiState* f : run.followers) {
        if (f->score_need() == kv::ScoreNeed::kNone) continue;
        kv::LayerState& F = f->layer(il);
        TOVA_CHECK(F.n_held() <= std::min(F.n_slot(), L.n_slot()));
        follower_probs.assign(static_cast<size_t>(c.n_head) * F.n_slot(), 0.f);
        const int n_copy = std::min(F.n_slot(), L.n_slot());
        for (int h = 0; h < c.n_head; ++h) {
          std::copy_n(&probs[static_cast<size_t>(h) * L.n_slot()], n_copy,
                      &follower_probs[static_cast<size_t>(h) * F.n_slot()]);
        }
        F.policy().observe(F.view(), follower_probs.data());
      }
    };
    auto attend = [&](int i) {
      const float* q = nullptr;
      const void* k = nullptr;
      if (moved) {
        q = mk.rotate_query(L, &s.q[static_cast<size_t>(i) * q_dim], s.pos[i], c, rope, s);
        k = mk.keys.data();
      }
      if (scores) probs.assign(static_cast<size_t>(c.n_head) * L.n_slot(), 0.f);
      // The fused kernel scores a whole GQA group at once: a row per query head of the group
      // (per head when heads are split over threads).
      const int group = c.n_head / c.n_head_kv;
      scratch.resize(static_cast<size_t>(L.n_slot()) * (heads_in_parallel ? c.n_head : group));
      if (heads_in_parallel) {
        pool.parallel_for(c.n_head, 1, [&](int64_t h0, int64_t h1) {
          // Each range of heads uses the scratch row of its first head.
          auto a = args_for(L, i, scores ? probs.data() : nullptr,
                            &scratch[static_cast<size_t>(h0) * L.n_slot()], q, k);
          a.head_begin = static_cast<int>(h0);
          a.head_end = static_cast<int>(h1);
          a.scratch_size = (h1 - h0) * L.n_slot();
          kernels::attention(a);
        });
      } else {
        auto a = args_for(L, i, scores ? probs.data() : nullptr, scratch.data(), q, k);
        a.scratch_size = static_cast<int64_t>(scratch.size());
        kernels::attention(a);
      }
      if (own_scores) L.policy().observe(L.view(), probs.data());
      if (follower_scores) observe_followers();
    };
    if (chunked) {
      // chunk:C — the whole chunk joins, attends causally, then the policy evicts once.
      for (int i : run.idx) insert(i);
      // Mapped positions are a function of the held positions up to each state, so one
      // mapping serves every query of the chunk (the causal mask hides later chunk tokens).
      if (moved) mk.rotate_keys(L, ms.positions(), rope, s);
      for (int i : run.idx) attend(i);
      L.evict(s.pos[run.idx.back()]);
    } else {
      for (int i : run.idx) {
        insert(i);
        if (moved) mk.rotate_keys(L, ms.positions(), rope, s);
        attend(i);
        L.evict(s.pos[i]);
        for (kv::MultiState* f : run.followers) {
          TOVA_CHECK(f->layer(il).n_held() <= f->holds_all_until());
        }
      }
    }
  };

  if (runs.size() == 1) {
    // Splitting heads over threads pays only when a token's attention is large enough to
    // outweigh waking the pool (~64K multiply-adds).
    const kv::LayerState& L = runs[0].state->layer(il);
    const int64_t work = static_cast<int64_t>(L.n_held() + 1) * c.n_head * c.head_dim;
    run_sequence(runs[0], pool.size() > 1 && c.n_head > 1 && work >= (1 << 16));
  } else {
    // Sequences differ widely in cost (budgets, full caches, scoring): hand them out one at a
    // time, costliest first, so no thread idles while another works through a long list.
    std::vector<std::pair<int64_t, int>> order;
    order.reserve(runs.size());
    for (int r = 0; r < static_cast<int>(runs.size()); ++r) {
      const int64_t held = runs[r].state->layer(il).n_held();
      const int64_t n_tok = static_cast<int64_t>(runs[r].idx.size());
      order.emplace_back(-(held + n_tok) * n_tok, r);
    }
    std::sort(order.begin(), order.end());
    pool.for_each_dynamic(static_cast<int64_t>(order.size()),
                          [&](int64_t j) { run_sequence(runs[order[j].second], false); });
  }
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
  for (int64_t i = 0; i < n; ++i) {
    kernels::dequantize_row(w.token_embd.type,
                            w.token_embd.data + w.token_embd.row_bytes * batch[i].token,
                            &s.x[i * c.n_embd], c.n_embd);
    if (c.embd_scale != 1.f) kernels::scale(&s.x[i * c.n_embd], c.embd_scale, c.n_embd);
  }

  kernels::RopeParams rope = c.rope;
  if (!w.rope_freqs.empty()) rope.freq_factors = w.rope_freqs.data();
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[il];
    const bool window_layer = !c.layer_window.empty() && c.layer_window[il] > 0;
    for (int64_t i = 0; i < n; ++i) {
      kernels::rms_norm(&s.x[i * c.n_embd], L.attn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                        c.rms_eps);
    }
    const kernels::WeightMatrix* qkv[] = {&L.wq, &L.wk, &L.wv};
    float* qkv_out[] = {s.q.data(), s.k.data(), s.v.data()};
    matmul_multi(qkv, s.xb.data(), n, qkv_out, pool);
    if (!L.bq.empty()) {
      for (int64_t i = 0; i < n; ++i) {
        kernels::add(&s.q[i * q_dim], L.bq.data(), q_dim);
        kernels::add(&s.k[i * kv_dim], L.bk.data(), kv_dim);
        kernels::add(&s.v[i * kv_dim], L.bv.data(), kv_dim);
      }
    }
    if (!L.q_norm.empty()) {
      // qwen3: every query and key head is RMS-normalised on its own before RoPE.
      for (int64_t h = 0; h < n * c.n_head; ++h) {
        float* q = &s.q[h * c.head_dim];
        kernels::rms_norm(q, L.q_norm.data(), q, c.head_dim, c.rms_eps);
      }
      for (int64_t h = 0; h < n * c.n_head_kv; ++h) {
        float* k = &s.k[h * c.head_dim];
        kernels::rms_norm(k, L.k_norm.data(), k, c.head_dim, c.rms_eps);
      }
    }
    attend_layer(il, window_layer ? c.rope_window : rope, s, pool);
    matmul(L.wo, s.att.data(), n, s.xb.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      float* xb = &s.xb[i * c.n_embd];
      if (!L.attn_post_norm.empty()) {
        kernels::rms_norm(xb, L.attn_post_norm.data(), xb, c.n_embd, c.rms_eps);
      }
      kernels::add(&s.x[i * c.n_embd], xb, c.n_embd);
      kernels::rms_norm(&s.x[i * c.n_embd], L.ffn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                        c.rms_eps);
    }
    const kernels::WeightMatrix* gate_up[] = {&L.w_gate, &L.w_up};
    float* gate_up_out[] = {s.hb.data(), s.hb2.data()};
    matmul_multi(gate_up, s.xb.data(), n, gate_up_out, pool);
    if (c.ffn_act == FfnAct::kGeluTanh) {
      kernels::gelu_mul(s.hb.data(), s.hb2.data(), n * c.n_ff);
    } else {
      kernels::silu_mul(s.hb.data(), s.hb2.data(), n * c.n_ff);
    }
    matmul(L.w_down, s.hb.data(), n, s.xb.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      float* xb = &s.xb[i * c.n_embd];
      if (!L.ffn_post_norm.empty()) {
        kernels::rms_norm(xb, L.ffn_post_norm.data(), xb, c.n_embd, c.rms_eps);
      }
      kernels::add(&s.x[i * c.n_embd], xb, c.n_embd);
    }
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
