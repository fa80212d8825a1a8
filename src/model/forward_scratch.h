// What one forward call works on besides the weights: the batch's tokens and sequences, and
// per-call buffers reused across calls (one ForwardScratch per thread that calls forward).
// ForwardScratch holds what every layer shares (the residual stream, positions, the batch's
// sequences) and the attention kinds' buffers; every other kind keeps its own buffers in its
// own file (KindScratch), so adding a layer kind adds no field here.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "kv/multi_state.h"
#include "model/attention_scratch.h"

namespace tova::model {

// One token of a batch. Tokens of the same sequence appear in order; each takes the next
// position of its sequence (MultiState::n_seen()). Several sequences with different policies
// and budgets may share one batch.
struct BatchToken {
  int32_t token = 0;
  kv::MultiState* state = nullptr;
  bool logits = false;  // write this token's logits
  // An embedding row fed instead of the token's ([n_embd], taken as it is: no embedding scale),
  // e.g. an image token from a vision projector; `token` is then not read.
  const float* embd = nullptr;
  // > 0: the token also sees the next sees_ahead tokens of its sequence, which must follow it
  // in this batch (an image whose tokens attend to each other without a causal mask, as
  // Gemma 4's do). The step must let every token join before any attends (an error otherwise).
  int32_t sees_ahead = 0;
};

// A sequence that rides along with another while their multi-states are equal. Until a bounded
// sequence first evicts, it holds exactly the tokens a sequence with a larger budget (or `full`)
// holds, in the same slots, so its outputs are bit-identical to that leader's. A follower's
// tokens are not in the batch: each of its layers receives the leader's keys and values and,
// if its policy scores, the leader's attention probabilities, and it computes nothing else.
// Its logits are the leader's.
struct Follower {
  kv::MultiState* leader = nullptr;  // in the batch
  kv::MultiState* state = nullptr;   // not in the batch
};

// The tokens of one sequence within a batch: their indices, in order, and its followers.
struct SequenceRun {
  kv::MultiState* state = nullptr;
  std::vector<int> idx;
  std::vector<kv::MultiState*> followers;
  // Some token sees ahead (an image): the run joins whole (kv::StepRows::whole).
  bool whole = false;
};

// A layer kind's own buffers: its file derives a struct from this and asks
// ForwardScratch::own<T>() for it.
struct KindScratch {
  virtual ~KindScratch() = default;
};

struct ForwardScratch {
  std::vector<float> x;           // [n_tok][n_embd] the residual stream
  std::vector<float> xb;          // [n_tok][n_embd] a block's normed input, then its output
  std::vector<float> hb, hb2;     // [n_tok][n_ff] gate and up projections (dense feed-forward)
  std::vector<float> logit_in;    // [n_out][n_embd] final-normed rows that want logits
  std::vector<int64_t> pos;       // [n_tok]
  std::vector<int64_t> max_pos;   // [n_tok] the causal limit: pos + BatchToken::sees_ahead
  std::vector<int32_t> tokens;    // [n_tok] the batch's token ids
  std::vector<SequenceRun> runs;  // the batch's sequences
  AttentionScratch attn;          // the attention kinds (attention_scratch.h)

  // The buffers of kind T (a KindScratch its file defines), made on first use and kept across
  // calls; a handful of kinds per model, so a short search.
  template <typename T>
  T& own() {
    static_assert(std::is_base_of_v<KindScratch, T>);
    const std::type_index id(typeid(T));
    for (auto& [type, p] : owned_) {
      if (type == id) return static_cast<T&>(*p);
    }
    owned_.emplace_back(id, std::make_unique<T>());
    return static_cast<T&>(*owned_.back().second);
  }

 private:
  std::vector<std::pair<std::type_index, std::unique_ptr<KindScratch>>> owned_;
};

}  // namespace tova::model
