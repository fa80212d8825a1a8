// Random ids of ordinary tokens for speed tests (llama-bench draws any id; control tokens can
// take odd paths in some engines, so we avoid them), with BOS first in a fresh sequence when
// the vocabulary adds one, as llama-bench does. Speed does not depend on which ids are drawn.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/model.h"

namespace tova::eval {

class TokenSource {
 public:
  TokenSource(const model::Model& m, uint64_t seed);

  // n tokens; the first is BOS when `fresh` and the vocabulary has one.
  std::vector<int32_t> draw(int n, bool fresh);

 private:
  std::mt19937_64 rng_;
  std::vector<int32_t> ids_;  // the ordinary tokens
  int32_t bos_ = -1;
};

}  // namespace tova::eval
