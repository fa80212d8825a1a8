// The sampler chain: repetition penalty -> top-k -> top-p -> min-p -> temperature -> draw,
// in llama.cpp's order, so its users get the behaviour they expect from the same flags.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"

namespace tova::runtime {

struct SamplerParams {
  float temp = 0.8f;            // <= 0: greedy (argmax, ties to the smallest id)
  int top_k = 40;               // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int repeat_last_n = 64;       // how many recent tokens the penalty looks at
  uint64_t seed = 0;
};

Status validate(const SamplerParams& p);

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
