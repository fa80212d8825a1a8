// The batch bookkeeping before a forward call's first operation (batch_prep.h).
#include "model/batch_prep.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kv/layer_step.h"

namespace tova::model {

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
      it = runs.end() - 1;
    } else {
      it->idx.push_back(i);
    }
    it->whole = it->whole || batch[i].sees_ahead > 0;
  }
}

namespace {

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
    if (f.state->n_layer() != f.leader->n_layer() ||
        f.state->n_recurrent() != f.leader->n_recurrent() || f.state->n_seen() != f.leader->n_seen() ||
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

}  // namespace

Status prepare_batch(std::span<const BatchToken> batch, std::span<const Follower> followers,
                     const ModelConfig& c, ForwardScratch& s) {
  const int64_t n = static_cast<int64_t>(batch.size());
  for (const BatchToken& t : batch) {
    if (t.embd != nullptr && c.n_embd_per_layer > 0) {
      // llama.cpp gives embedding rows per-layer inputs of their own; not implemented here.
      return make_error("embedding rows (images) are not supported for models with per-layer "
                        "embeddings (Gemma 4 E2B/E4B)");
    }
    if (t.embd == nullptr && (t.token < 0 || t.token >= c.n_vocab)) {
      return make_error("token id {} is outside the vocabulary (0..{})", t.token, c.n_vocab - 1);
    }
    if (t.state == nullptr || t.state->n_layer() != c.n_attention_layers() ||
        t.state->n_recurrent() != c.n_recurrent_states()) {
      return make_error("batch token without a multi-state of this model");
    }
  }
  group_by_sequence(batch, s.runs);
  for (const SequenceRun& run : s.runs) {
    if (run.state->budget() >= 0 && run.state->max_new() > 1 &&
        static_cast<int>(run.idx.size()) >
            (run.whole ? std::max(run.state->max_new(), run.state->max_image())
                       : run.state->max_new())) {
      return make_error("a chunk of {} tokens exceeds the sequence's prefill chunk size {}{}",
                        run.idx.size(), run.state->max_new(),
                        run.whole ? " and its image size" : "");
    }
  }
  TOVA_RETURN_IF_ERROR(attach_followers(followers, s.runs));
  // Pools that cannot take this step's tokens grow now, before any layer runs: never inside a
  // step (where an allocation failure could not be reported), and an error if memory is short.
  for (const SequenceRun& run : s.runs) {
    const int n_new = static_cast<int>(run.idx.size());
    TOVA_RETURN_IF_ERROR(run.state->make_room(n_new, run.whole));
    for (kv::MultiState* f : run.followers) TOVA_RETURN_IF_ERROR(f->make_room(n_new, run.whole));
  }
  // The storage types of the batch's pools (keys and values apart), each converted once per
  // layer by the attention kind.
  for (auto* conv : {&s.attn.conv_k, &s.attn.conv_v}) {
    for (AttentionScratch::Converted& cv : *conv) cv.active = false;
  }
  auto want = [](std::vector<AttentionScratch::Converted>& conv, KvType t, bool rotated) {
    for (AttentionScratch::Converted& cv : conv) {
      if (cv.type == t && cv.rotated == rotated) {
        cv.active = true;
        return;
      }
    }
    conv.push_back({.type = t, .rotated = rotated, .active = true});
  };
  auto want_state = [&](const kv::MultiState& st) {
    const KvFormat& f = st.kv_type();
    want(s.attn.conv_k, f.k, f.rotate && kv_quantized(f.k));
    want(s.attn.conv_v, f.v, f.rotate && kv_quantized(f.v));
  };
  for (const SequenceRun& run : s.runs) {
    want_state(*run.state);
    for (const kv::MultiState* f : run.followers) want_state(*f);
  }
  // Positions: each token takes the next position of its own sequence.
  s.pos.resize(n);
  s.attn.rope_cs_valid = false;  // positions change with every call
  std::vector<std::pair<kv::MultiState*, int64_t>> next;
  for (int64_t i = 0; i < n; ++i) {
    auto it = std::find_if(next.begin(), next.end(),
                           [&](const auto& p) { return p.first == batch[i].state; });
    if (it == next.end()) {
      next.emplace_back(batch[i].state, batch[i].state->n_seen());
      it = next.end() - 1;
    }
    s.pos[i] = it->second++;
  }  // Causal limits: a token that sees ahead (an image without a causal mask) sees the next
  // sees_ahead tokens of its sequence, which must be in this batch and join before it attends.
  s.max_pos.resize(n);
  for (int64_t i = 0; i < n; ++i) s.max_pos[i] = s.pos[i] + std::max(0, batch[i].sees_ahead);
  for (const SequenceRun& run : s.runs) {
    bool ahead = false;
    for (size_t j = 0; j < run.idx.size(); ++j) {
      const int32_t k = batch[run.idx[j]].sees_ahead;
      if (k <= 0) continue;
      ahead = true;
      if (j + static_cast<size_t>(k) >= run.idx.size()) {
        return make_error("a token sees {} tokens ahead, but only {} of its sequence follow it in "
                          "the batch (an image must be fed in one batch)",
                          k, run.idx.size() - j - 1);
      }
    }
    if (ahead && !kv::joins_all_first(*run.state, run.followers, static_cast<int>(run.idx.size()),
                                      run.whole)) {
      return make_error("an image attended without a causal mask needs a step in which all its "
                        "tokens join before any attends (policy '{}' evicts or scores within "
                        "this step)",
                        run.state->policy().label());
    }
  }
  // The image rows' positions, marked before any layer joins them: a state that keeps images
  // (kv::MultiStateOptions::keep_images) then never lets its policy choose them.
  for (const SequenceRun& run : s.runs) {
    int64_t first = -1, last = -1;
    for (const int i : run.idx) {
      if (batch[i].embd == nullptr) continue;
      if (first < 0) first = s.pos[i];
      last = s.pos[i];
    }
    if (first < 0) continue;
    run.state->mark_image({.begin = first, .end = last + 1});
    for (kv::MultiState* f : run.followers) f->mark_image({.begin = first, .end = last + 1});
  }

  return ok_status();
}

}  // namespace tova::model
