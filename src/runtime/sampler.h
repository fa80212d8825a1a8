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
// each drawn token. Draws are first made unconstrained, up to kTries independent ones, and the
// first the grammar allows is kept (one check of one token's text each); only when all are
// refused is the full mask built (one walk of the vocabulary's trie) and the draw made among
// the allowed tokens. Either way the token follows the chain's distribution restricted to the
// allowed tokens (rejection sampling conditions exactly); greedy takes the allowed argmax. With
// top-k/top-p/min-p on, the unconstrained draws see the chain's truncated set of all tokens
// (as llama.cpp's sampler does), the masked one the truncation of the allowed tokens. When
// nothing is allowed (the vocabulary cannot write what the grammar needs, or the grammar is too
// ambiguous to go on: grammar_error()) an end-of-generation token is returned.
class Sampler {
 public:
  explicit Sampler(const SamplerParams& p, std::optional<grammar::Constraint> grammar = {});
  // history: the tokens so far (the penalty looks at its last repeat_last_n).
  int32_t sample(const float* logits, int n_vocab, std::span<const int32_t> history);
  bool constrained() const { return grammar_.has_value(); }
  // With a grammar: how many draws needed the full mask (stats for benchmarks).
  int64_t n_masked() const { return n_masked_; }
  // Empty, or why the last draw found no token allowed although the grammar might allow one:
  // the matcher refused the step as too ambiguous (grammar::Matcher::kMaxStacks).
  const std::string& grammar_error() const { return grammar_error_; }
  // The random generator's state as text (session files), and its restoration; an error
  // (nothing changed) if the text is not such a state.
  std::string rng_state() const;
  Status set_rng_state(const std::string& text);

 private:
  struct Cand {
    int32_t id;
    float logit;
  };
  static constexpr int kTries = 64;
  // The chain's distribution over every token (allowed null) or those allowed[id] != 0:
  // greedy_ for greedy, else weights w_ of cands_[0, w_.size()).
  void prepare(const float* logits, int n_vocab, std::span<const int32_t> history,
               const std::vector<char>* allowed);
  int32_t pick();  // one draw from what prepare() made

  SamplerParams p_;
  std::mt19937_64 rng_;
  std::vector<Cand> cands_;
  std::vector<double> w_;
  double wsum_ = 0;
  int32_t greedy_ = -1;
  std::optional<grammar::Constraint> grammar_;
  std::vector<char> allowed_;  // [n_vocab] the grammar's mask when it was built
  int64_t n_masked_ = 0;
  std::string grammar_error_;
};

// argmax with ties to the smallest id.
int32_t argmax(const float* logits, int n);

}  // namespace tova::runtime
