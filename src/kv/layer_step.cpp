#include "kv/layer_step.h"

#include <algorithm>

#include "core/check.h"

namespace tova::kv {

namespace {

// The batch's conversion of row i into (type, rotated), or null.
const uint8_t* stored_row(std::span<const StoredRows> stored, KvType type, bool rotated, int i,
                          const LayerState& L) {
  for (const StoredRows& r : stored) {
    if (r.type == type && r.rotated == rotated) {
      return r.data + static_cast<size_t>(i) * L.n_head_kv() * kv_row_bytes(type, L.head_dim());
    }
  }
  return nullptr;
}

// Writes batch row i into L: the batch's converted rows when it made them in L's types, else
// the float rows (converted by L).
void insert_row(LayerState& L, const StepRows& rows, int i, int32_t* slots) {
  const KvFormat& f = L.kv_type();
  const uint8_t* k = stored_row(rows.stored_k, f.k, L.k_rotated(), i, L);
  const uint8_t* v = stored_row(rows.stored_v, f.v, L.v_rotated(), i, L);
  if (k != nullptr && v != nullptr) {
    L.insert_stored(rows.pos[i], k, v, slots);
  } else {
    const size_t off = static_cast<size_t>(i) * rows.kv_dim;
    L.insert(rows.pos[i], rows.k + off, rows.v + off, slots);
  }
}

// The step's followers, given what their leader did.
class Followers {
 public:
  Followers(std::span<MultiState* const> followers, int il, int n_head, StepScratch& scratch)
      : followers_(followers), il_(il), n_head_(n_head), scratch_(scratch) {
    for (const MultiState* f : followers_) {
      scores_ |= f->score_need() != ScoreNeed::kNone;
      observes_ |= f->score_need() != ScoreNeed::kNone || f->needs_queries();
      queries_ |= f->needs_queries();
    }
  }

  bool scores() const { return scores_; }
  bool observes() const { return observes_; }
  bool queries() const { return queries_; }

  // Same tokens in the same order into free stacks that hand out the lowest slot first: a
  // follower's slots match the leader's.
  void insert(const StepRows& rows, int i, std::span<const int32_t> leader_slots) {
    for (MultiState* f : followers_) {
      LayerState& F = f->layer(il_);
      scratch_.follower_slots.resize(F.n_head_kv());
      insert_row(F, rows, i, scratch_.follower_slots.data());
      TOVA_CHECK(
          std::equal(leader_slots.begin(), leader_slots.end(), scratch_.follower_slots.begin()));
    }
  }

  // The leader's probabilities [n_head][its n_slot] as each follower's policy expects them,
  // [n_head][the follower's n_slot]: every held slot is below both pool sizes.
  // query: the row's query before RoPE (null when none of the step's states reads it).
  void observe(const LayerState& L, const float* probs, int64_t query_pos, int64_t last_pos,
               const float* query, const QueryRope* rope) {
    for (MultiState* f : followers_) {
      const bool scores = f->score_need() != ScoreNeed::kNone;
      if (!scores && !f->needs_queries()) continue;
      LayerState& F = f->layer(il_);
      const float* fp = nullptr;
      if (scores) {
        TOVA_CHECK(F.n_held() <= std::min(F.n_slot(), L.n_slot()));
        scratch_.follower_probs.assign(static_cast<size_t>(n_head_) * F.n_slot(), 0.f);
        const int n_copy = std::min(F.n_slot(), L.n_slot());
        for (int h = 0; h < n_head_; ++h) {
          std::copy_n(probs + static_cast<size_t>(h) * L.n_slot(), n_copy,
                      &scratch_.follower_probs[static_cast<size_t>(h) * F.n_slot()]);
        }
        fp = scratch_.follower_probs.data();
      }
      SlotView v = F.view();
      v.query_pos = query_pos;
      v.step_last_pos = last_pos;
      if (f->needs_queries()) {
        TOVA_CHECK(query != nullptr && rope != nullptr);
        v.query = query;
        v.rope = rope;
      }
      F.policy().observe(v, fp);
    }
  }

  void check_held() const {
    for (const MultiState* f : followers_) {
      TOVA_CHECK(f->layer(il_).n_held() <= f->holds_all_until());
    }
  }

 private:
  std::span<MultiState* const> followers_;
  int il_;
  int n_head_;
  StepScratch& scratch_;
  bool scores_ = false;
  bool observes_ = false;  // some follower scores or reads queries
  bool queries_ = false;   // some follower reads queries
};

}  // namespace

namespace {

bool any_scores(const MultiState& ms, std::span<MultiState* const> followers) {
  bool scores = ms.score_need() != ScoreNeed::kNone;
  for (const MultiState* f : followers) scores |= f->score_need() != ScoreNeed::kNone;
  return scores;
}

// Every token joins before any attends (see step_layer). Under an unbounded policy only window
// layers drop states, by position, which each token's window mask hides just the same: with
// MultiStateOptions::window_drops_at_step_end their pools grow for the step (multi_state.cpp
// size_layer) and drop at its end.
bool joins_first(const MultiState& ms, bool scores, int n_tok) {
  const bool chunk = ms.budget() >= 0 && ms.max_new() > 1;
  return chunk || (n_tok > 1 && !scores && !moves_positions(ms.positions()) &&
                   (ms.window_drops_at_step_end() ||
                    ms.n_seen() + n_tok <= static_cast<int64_t>(ms.holds_all_until())));
}

}  // namespace

namespace {

// An image's step (StepRows::whole) joins whole where every pool can hold it beside its states.
bool image_fits(const MultiState& ms, int n_tok) {
  return n_tok <= std::max(ms.max_new(), ms.max_image());
}

}  // namespace

bool evicts_between_tokens(const MultiState& ms, std::span<MultiState* const> followers,
                           int n_tok, bool whole) {
  if (n_tok <= 1 || (whole && image_fits(ms, n_tok)) ||
      joins_first(ms, any_scores(ms, followers), n_tok)) {
    return false;
  }
  // Token by token, but where no layer can evict and positions stay put, each token still sees
  // the tokens before it and nothing else.
  return moves_positions(ms.positions()) ||
         ms.n_seen() + n_tok > static_cast<int64_t>(ms.holds_all_until());
}

bool joins_all_first(const MultiState& ms, std::span<MultiState* const> followers, int n_tok,
                     bool whole) {
  return n_tok <= 1 || (whole && image_fits(ms, n_tok)) ||
         joins_first(ms, any_scores(ms, followers), n_tok);
}

void end_step(MultiState& ms, std::span<MultiState* const> followers, int il,
              std::span<const int> idx, const int64_t* pos) {
  LayerState& L = ms.layer(il);
  const bool chunk = ms.budget() >= 0 && ms.max_new() > 1;
  if (chunk) {
    L.evict(pos[idx.back()]);
  } else {
    for (const int i : idx) L.evict(pos[i]);
  }
  for (const MultiState* f : followers) {
    TOVA_CHECK(f->layer(il).n_held() <= f->holds_all_until());
  }
}

void step_layer(MultiState& ms, std::span<MultiState* const> followers, int il,
                const StepRows& rows, int n_head, StepAttention& attention, StepScratch& scratch,
                bool evict) {
  LayerState& L = ms.layer(il);
  Followers fw(followers, il, n_head, scratch);
  const bool own_scores = ms.score_need() != ScoreNeed::kNone;
  const bool scores = own_scores || fw.scores();
  // Policies that read the rows' queries before RoPE (expected-attention) observe every row,
  // with or without probabilities.
  const bool own_observes = own_scores || ms.needs_queries();
  const bool observes = own_observes || fw.observes();
  TOVA_CHECK(!(ms.needs_queries() || fw.queries()) ||
             (rows.q_pre != nullptr && rows.rope != nullptr));
  scratch.slots.resize(L.n_head_kv());

  auto join = [&](int t) {
    const int i = rows.idx[t];
    insert_row(L, rows, i, scratch.slots.data());
    fw.insert(rows, i, scratch.slots);
  };
  // Token t's probabilities to the policies; last_pos: the step's last position as
  // SlotView::step_last_pos gives it to the policy.
  auto observe = [&](int t, const float* probs, int64_t last_pos) {
    const int i = rows.idx[t];
    const int64_t query_pos = rows.pos[i];
    const float* query =
        rows.q_pre != nullptr ? rows.q_pre + static_cast<size_t>(i) * rows.q_dim : nullptr;
    if (own_observes) {
      SlotView v = L.view();
      v.query_pos = query_pos;
      v.step_last_pos = last_pos;
      if (ms.needs_queries()) {
        v.query = query;
        v.rope = rows.rope;
      }
      L.policy().observe(v, own_scores ? probs : nullptr);
    }
    if (fw.observes()) fw.observe(L, probs, query_pos, last_pos, query, rows.rope);
  };
  // StepAttention writes every entry of a token's probabilities: no clearing (it would cost the
  // slots allocated, k + C after chunks, not the slots held). A pool without room made ahead
  // (make_room) grows as tokens join: the size is read after they did.
  auto probs_per_token = [&] { return static_cast<size_t>(n_head) * L.n_slot(); };
  auto probs_for = [&](int n_tok_at_once) -> float* {
    if (!scores) return nullptr;
    const size_t n = probs_per_token() * n_tok_at_once;
    if (scratch.probs.size() < n) scratch.probs.resize(n);
    return scratch.probs.data();
  };

  const int n_tok = static_cast<int>(rows.idx.size());
  // An image's step is a chunk of its own, whatever the prefill mode (StepRows::whole).
  const bool image = rows.whole && image_fits(ms, n_tok);
  const bool chunk = (ms.budget() >= 0 && ms.max_new() > 1) || image;
  // An exact step that no layer evicts in (holds_all_until), that no policy scores, in a mode
  // whose mapped positions do not depend on what is held, gives every token the same view
  // whether the later tokens joined before it or not: the causal mask hides them.
  const bool all_join_first = image || joins_first(ms, scores, n_tok);
  TOVA_CHECK(evict || !evicts_between_tokens(ms, followers, n_tok, rows.whole));
  if (!all_join_first) {
    for (int t = 0; t < n_tok; ++t) {
      const int64_t pos = rows.pos[rows.idx[t]];
      join(t);
      attention.joined(L);
      float* probs = probs_for(1);
      attention.attend(L, t, probs);
      if (observes) observe(t, probs, pos);
      if (evict) L.evict(pos);
      fw.check_held();
    }
    return;
  }
  // chunk:C. Mapped positions are a function of the held positions up to each state, so one
  // rotation of the held keys serves every query of the chunk.
  const int64_t last_pos = rows.pos[rows.idx[n_tok - 1]];
  for (int t = 0; t < n_tok; ++t) join(t);
  attention.joined(L);
  // Blocks of tokens whose probabilities fit in kMaxBlockProbs floats (8 MiB; one block without
  // scores); the policy observes them in order.
  constexpr size_t kMaxBlockProbs = size_t{1} << 21;
  const size_t per_token = probs_per_token();
  const int block = !scores ? n_tok
                    : attention.attends_in_parallel()
                        ? static_cast<int>(std::clamp<size_t>(kMaxBlockProbs / per_token, 1, n_tok))
                        : 1;
  for (int t0 = 0; t0 < n_tok; t0 += block) {
    const int t1 = std::min(n_tok, t0 + block);
    float* probs = probs_for(t1 - t0);
    attention.attend_many(L, t0, t1, probs, per_token);
    if (!observes) continue;
    for (int t = t0; t < t1; ++t) {
      observe(t, probs != nullptr ? probs + (t - t0) * per_token : nullptr,
              chunk ? last_pos : rows.pos[rows.idx[t]]);
    }
  }
  if (!evict) return;
  if (chunk) {
    L.evict(last_pos);
    return;
  }
  // Nothing to evict but what left the window (see joins_first); in token order, as one by one.
  for (int t = 0; t < n_tok; ++t) L.evict(rows.pos[rows.idx[t]]);
  fw.check_held();
}

}  // namespace tova::kv
