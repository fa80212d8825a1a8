// The sampler chain of tova/options.h's SamplerParams.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "grammar/constraint.h"
#include "tova/options.h"

namespace tova::runtime {

// With a grammar (SamplerParams::grammar, compiled against the vocabulary: make_sampler in
// session_impl.h) the chain draws only tokens the grammar allows, and the grammar moves past
// each drawn token. The draw is first made unconstrained and kept when the grammar allows it;
// only when it does not is the full mask built (one walk of the vocabulary's trie) and the
// draw repeated over the allowed tokens. Without truncation (top-k, top-p, min-p off) that is
// exactly a draw from the masked distribution (an allowed token keeps its probability, and a
// refusal redraws in proportion to the allowed ones); greedy always takes the allowed argmax;
// with truncation the first draw sees the truncated set of all tokens, as llama.cpp's sampler
// does. When nothing is allowed (the vocabulary cannot write what the grammar needs) an
// end-of-generation token is returned.
class Sampler {
 public:
  explicit Sampler(const SamplerParams& p, std::optional<grammar::Constraint> grammar = {});
  // history: the tokens so far (the penalty looks at its last repeat_last_n).
  int32_t sample(const float* logits, int n_vocab, std::span<const int32_t> history);
  bool constrained() const { return grammar_.has_value(); }
  // With a grammar: how many draws needed the full mask (stats for benchmarks).
  int64_t n_masked() const { return n_masked_; }
  // The random generator's state as text (session files), and its restoration; an error
  // (nothing changed) if the text is not such a state.
  std::string rng_state() const;
  Status set_rng_state(const std::string& text);

 private:
  struct Cand {
    int32_t id;
    float logit;
  };
  // The chain over every token (allowed null) or over those allowed[id] != 0.
  int32_t draw(const float* logits, int n_vocab, std::span<const int32_t> history,
               const std::vector<char>* allowed);

  SamplerParams p_;
  std::mt19937_64 rng_;
  std::vector<Cand> cands_;
  std::optional<grammar::Constraint> grammar_;
  std::vector<char> allowed_;  // [n_vocab] the grammar's mask when it was built
  int64_t n_masked_ = 0;
};

// argmax with ties to the smallest id.
int32_t argmax(const float* logits, int n);

}  // namespace tova::runtime
