// A drafter proposes the tokens that may follow a history, for speculative decoding
// (speculation.h). One file per drafter (drafter_*.cpp) and one line each in make_drafter
// (speculation.cpp): the only list of drafter names.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/result.h"
#include "tova/options.h"

namespace tova {
class Engine;
}

namespace tova::runtime {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to n_max tokens likely to follow `history` (every token of the conversation, its last
  // the one about to be fed); empty: no proposal. One token per position (a deterministic
  // proposal), which is what makes "the sampler's own token" the acceptance rule.
  virtual Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) = 0;
  // An independent copy (a cloned session drafts on its own).
  virtual std::unique_ptr<Drafter> clone() const = 0;
};

// The drafters (make_drafter in speculation.cpp picks one by SpeculativeOptions::type).
// llama.cpp's ngram-simple (drafter_ngram_simple.cpp).
std::unique_ptr<Drafter> make_ngram_simple(const SpeculativeOptions& o);
// A greedy draft model (drafter_model.cpp): e.draft_model() with its own multi-state under
// `cache` (its own policy and budget).
Result<std::unique_ptr<Drafter>> make_model_drafter(const Engine& e, const SpeculativeOptions& o,
                                                    const CacheOptions& cache);

}  // namespace tova::runtime
