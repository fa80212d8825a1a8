// ngram-simple: draft-free lookup in the prompt and the generated text, as llama.cpp's
// `--spec-type ngram-simple` (common/ngram-map.cpp, common_ngram_simple_draft) defines it:
//   - the pattern is the last size_n tokens of the history (the token about to be fed last);
//   - the history is searched backwards for the most recent earlier occurrence of the pattern,
//     starting size_n + 1 tokens before the end (the pattern's own place excluded) and never at
//     position 0 (llama.cpp's "no match" marker, kept so both draft the same);
//   - the draft is what followed that occurrence, at most size_m tokens (and n_max), and
//     nothing when fewer than size_n tokens followed it or the history holds no more than
//     size_n + size_m tokens.
// Stateless: the history is the whole state. Cost: one backward scan per step, O(history x
// size_n) at worst, far below a forward pass.
#include <algorithm>

#include "runtime/drafter.h"

namespace tova::runtime {
namespace {

class NgramSimple : public Drafter {
 public:
  NgramSimple(int size_n, int size_m) : n_(size_n), m_(size_m) {}

  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) override {
    std::vector<int32_t> out;
    const size_t len = history.size();
    const size_t n = static_cast<size_t>(n_), m = static_cast<size_t>(m_);
    // llama.cpp counts the history without the sampled token (len - 1) and needs more than
    // size_n + size_m + 1 of those.
    if (len == 0 || len - 1 <= n + m + 1 || n_max <= 0) return out;
    const std::span<const int32_t> pattern = history.subspan(len - n, n);
    size_t match = 0;
    for (size_t j = len - 1 - n - 1; j > 0; --j) {
      if (std::equal(pattern.begin(), pattern.end(), history.begin() + j)) {
        match = j;
        break;
      }
    }
    if (match == 0) return out;
    const size_t follow = len - 1 - (match + n);  // tokens after the occurrence, before ours
    const size_t copy = std::min(m, follow);
    if (copy < n) return out;
    const size_t take = std::min(copy, static_cast<size_t>(n_max));
    out.assign(history.begin() + match + n, history.begin() + match + n + take);
    return out;
  }

  std::unique_ptr<Drafter> clone() const override { return std::make_unique<NgramSimple>(*this); }

 private:
  int n_, m_;
};

}  // namespace

std::unique_ptr<Drafter> make_ngram_simple(const SpeculativeOptions& o) {
  return std::make_unique<NgramSimple>(o.ngram_size_n, o.ngram_size_m);
}

}  // namespace tova::runtime
