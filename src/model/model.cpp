#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
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
                               .max_new = max_new};
}

void Model::matmul(const kernels::WeightMatrix& w, const float* x, int64_t n_tok, float* y,
                   ThreadPool& pool) const {
  if (options_.f32_activations) {
    kernels::matmul_f32_activations(w, x, n_tok, y, pool);
  } else {
    kernels::matmul(w, x, n_tok, y, pool);
  }
}

namespace {

bool same_rope(const kernels::RopeParams& a, const kernels::RopeParams& b) {
  return a.n_rot == b.n_rot && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.mode == b.mode;
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
        (f.state->budget() >= 0 && n_after > f.state->budget()) ||
        (f.leader->budget() >= 0 && n_after > f.leader->budget())) {
      return make_error(
          "a follower must be exact, at its leader's position, and hold every token of the "
          "batch without evicting (follower at {}, leader at {}, {} tokens)",
          f.state->n_seen(), f.leader->n_seen(), lead->idx.size());
    }
    lead->followers.push_back(f.state);
  }
  return ok_status();
}

}  // namespace

// Attention for every token of the batch in layer il, with the per-step semantics of the
// multi-state: join, attend over everything held, then let the policy evict.
void Model::attend_layer(int il, const kernels::RopeParams& rope, ForwardScratch& s,
                         ThreadPool& pool) const {
  const ModelConfig& c = config_;
  const int q_dim = c.n_head * c.head_dim;
  const int kv_dim = c.n_head_kv * c.head_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
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
  for (int64_t i = 0; i < n; ++i) {
    const float* cs = &s.rope_cs[i * rope.n_rot];
    kernels::rope_apply(&s.q[i * q_dim], c.n_head, c.head_dim, cs, rope);
    kernels::rope_apply(&s.k[i * kv_dim], c.n_head_kv, c.head_dim, cs, rope);
  }

  auto args_for = [&](const kv::LayerState& L, int i, float* probs, float* scratch) {
    return kernels::AttentionArgs{.q = &s.q[static_cast<size_t>(i) * q_dim],
                                  .n_head = c.n_head,
                                  .n_head_kv = c.n_head_kv,
                                  .head_dim = c.head_dim,
                                  .n_slot = L.n_slot(),
                                  .k = L.keys(),
                                  .v = L.values(),
                                  .kv_f16 = L.kv_type() == kv::KvType::kF16,
                                  .pos = L.pos(),
                                  .max_pos = s.pos[i],
                                  .scale = scale,
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
    std::vector<float> probs, scratch, follower_probs;
    std::vector<int32_t> slots(c.n_head_kv), follower_slots(c.n_head_kv);
    auto insert = [&](int i) {
      const float* k = &s.k[static_cast<size_t>(i) * kv_dim];
      const float* v = &s.v[static_cast<size_t>(i) * kv_dim];
      L.insert(s.pos[i], k, v, slots.data());
      for (kv::MultiState* f : run.followers) {
        // Same tokens in the same order into free stacks that hand out the lowest slot first:
        // the follower's slots match the leader's.
        f->layer(il).insert(s.pos[i], k, v, follower_slots.data());
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
      if (scores) probs.assign(static_cast<size_t>(c.n_head) * L.n_slot(), 0.f);
      // The fused kernel scores a whole GQA group at once: a row per query head of the group
      // (per head when heads are split over threads).
      const int group = c.n_head / c.n_head_kv;
      scratch.resize(static_cast<size_t>(L.n_slot()) * (heads_in_parallel ? c.n_head : group));
      if (heads_in_parallel) {
        pool.parallel_for(c.n_head, 1, [&](int64_t h0, int64_t h1) {
          // Each range of heads uses the scratch row of its first head.
          auto a = args_for(L, i, scores ? probs.data() : nullptr,
                            &scratch[static_cast<size_t>(h0) * L.n_slot()]);
          a.head_begin = static_cast<int>(h0);
          a.head_end = static_cast<int>(h1);
          a.scratch_size = (h1 - h0) * L.n_slot();
          kernels::attention(a);
        });
      } else {
        auto a = args_for(L, i, scores ? probs.data() : nullptr, scratch.data());
        a.scratch_size = static_cast<int64_t>(scratch.size());
        kernels::attention(a);
      }
      if (own_scores) L.policy().observe(L.view(), probs.data());
      if (follower_scores) observe_followers();
    };
    if (chunked) {
      // chunk:C — the whole chunk joins, attends causally, then the policy evicts once.
      for (int i : run.idx) insert(i);
      for (int i : run.idx) attend(i);
      L.evict_to(ms.budget());
    } else {
      for (int i : run.idx) {
        insert(i);
        attend(i);
        L.evict_to(ms.budget());
        for (kv::MultiState* f : run.followers) TOVA_CHECK(f->layer(il).n_held() <= f->budget());
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
  }

  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[il];
    for (int64_t i = 0; i < n; ++i) {
      kernels::rms_norm(&s.x[i * c.n_embd], L.attn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                        c.rms_eps);
    }
    matmul(L.wq, s.xb.data(), n, s.q.data(), pool);
    matmul(L.wk, s.xb.data(), n, s.k.data(), pool);
    matmul(L.wv, s.xb.data(), n, s.v.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      if (c.qkv_bias) {
        kernels::add(&s.q[i * q_dim], L.bq.data(), q_dim);
        kernels::add(&s.k[i * kv_dim], L.bk.data(), kv_dim);
        kernels::add(&s.v[i * kv_dim], L.bv.data(), kv_dim);
      }
    }
    attend_layer(il, c.rope, s, pool);
    matmul(L.wo, s.att.data(), n, s.xb.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      kernels::add(&s.x[i * c.n_embd], &s.xb[i * c.n_embd], c.n_embd);
      kernels::rms_norm(&s.x[i * c.n_embd], L.ffn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                        c.rms_eps);
    }
    matmul(L.w_gate, s.xb.data(), n, s.hb.data(), pool);
    matmul(L.w_up, s.xb.data(), n, s.hb2.data(), pool);
    kernels::silu_mul(s.hb.data(), s.hb2.data(), n * c.n_ff);
    matmul(L.w_down, s.hb.data(), n, s.xb.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      kernels::add(&s.x[i * c.n_embd], &s.xb[i * c.n_embd], c.n_embd);
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
  return ok_status();
}

}  // namespace tova::model
