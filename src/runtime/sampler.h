// The sampler chain of tova/options.h's SamplerParams.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/options.h"

namespace tova::runtime {

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p);
  // history: the tokens so far (the penalty looks at its last repeat_last_n).
  int32_t sample(const float* logits, int n_vocab, std::span<const int32_t> history);
  // The random generator's state as text (session files), and its restoration; an error
  // (nothing changed) if the text is not such a state.
  std::string rng_state() const;
  Status set_rng_state(const std::string& text);

 private:
  struct Cand {
    int32_t id;
    float logit;
  };
  SamplerParams p_;
  std::mt19937_64 rng_;
  std::vector<Cand> cands_;
};

// argmax with ties to the smallest id.
int32_t argmax(const float* logits, int n);

}  // namespace tova::runtime
