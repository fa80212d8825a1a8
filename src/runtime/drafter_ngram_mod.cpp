// ngram-mod: draft-free lookup through a hashed n-gram table, after llama.cpp's
// `--spec-type ngram-mod` (common/ngram-mod.cpp, common_ngram_mod; common/speculative.cpp's
// ngram-mod driver). What is implemented:
//   - the table maps the hash of n_match tokens to the token that last followed them (a later
//     occurrence overwrites an earlier one; two n-grams whose hashes meet share a slot, as in
//     llama.cpp: the same multiply-add hash of the tokens, modulo 4M slots);
//   - the history's n-grams (prompt and generated text) enter the table: all of them at the
//     first draft (llama.cpp's begin() with the prompt), then in chunks, when more than 32
//     tokens were added since the last chunk (only n-grams whose follower is fed);
//   - a draft chains lookups: the last n_match tokens (the one about to be fed last) give the
//     next token, the window slides over it, up to the draft length; a miss before n_min
//     tokens drafts nothing, a later one ends the draft;
//   - five drafts in a row of which less than a quarter was accepted empty the table (llama.cpp
//     resets it the same way); the table is emptied too when more than a quarter of its slots
//     are used.
// Differences, by design: llama.cpp keeps one table for all sequences of a server; here each
// session has its own (a session's drafts depend on its own history alone, so speculation's
// output never depends on other requests — it could not anyway, the output is exact). The
// table is a map of the slots in use rather than a 16 MB array per session: the same slots,
// lookups and collisions, memory in proportion to the history. The draft length is the
// session's (--spec-draft-n-max, --spec-draft-n-min and the adaptive length), not ngram-mod's
// own n_max 64 / n_min 48 defaults; n_match is --spec-ngram-mod-n-match (24, as llama.cpp).
#include <algorithm>
#include <unordered_map>

#include "runtime/drafter.h"

namespace tova::runtime {
namespace {

constexpr uint64_t kSlots = 4 * 1024 * 1024;
constexpr size_t kChunk = 32;      // tokens added before the table takes a new chunk
constexpr double kMaxUsed = 0.25;  // share of slots in use beyond which the table is emptied
constexpr int kLowStreak = 5;      // drafts in a row mostly rejected before the table is emptied

class NgramMod : public Drafter {
 public:
  explicit NgramMod(int n_match) : n_(static_cast<size_t>(n_match)) {}

  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) override {
    std::vector<int32_t> out;
    note_acceptance(history);
    // llama.cpp's prompt: the fed history, without the token about to be fed.
    const size_t cur = history.empty() ? 0 : history.size() - 1;
    if (cur < n_ || n_max <= 0) return out;
    if (added_ > cur) started_ = false;  // a shorter history (a reset session): take it again
    if (!started_ || added_ + kChunk < cur) {
      if (!started_) added_ = 0;
      started_ = true;
      for (size_t i = added_; i + n_ < cur; ++i) slots_[slot(&history[i])] = history[i + n_];
      added_ = cur - n_;
      if (static_cast<double>(slots_.size()) > kMaxUsed * kSlots) slots_.clear();
    }
    std::vector<int32_t> window(history.end() - static_cast<long>(n_), history.end());
    for (int i = 0; i < n_max; ++i) {
      const auto it = slots_.find(slot(&window[window.size() - n_]));
      if (it == slots_.end()) break;
      out.push_back(it->second);
      window.push_back(it->second);
    }
    last_len_ = history.size();
    last_draft_ = out;
    return out;
  }

  std::unique_ptr<Drafter> clone() const override { return std::make_unique<NgramMod>(*this); }

 private:
  uint64_t slot(const int32_t* tokens) const {
    uint64_t h = 0;
    for (size_t i = 0; i < n_; ++i) {
      h = h * 6364136223846793005ULL + static_cast<uint64_t>(static_cast<int64_t>(tokens[i]));
    }
    return h % kSlots;
  }

  // How much of the last draft the history took (the drafts right after the token then fed).
  void note_acceptance(std::span<const int32_t> history) {
    if (last_draft_.empty() || history.size() <= last_len_) return;
    size_t accepted = 0;
    while (accepted < last_draft_.size() && last_len_ + accepted < history.size() &&
           history[last_len_ + accepted] == last_draft_[accepted]) {
      ++accepted;
    }
    if (static_cast<double>(accepted) < 0.25 * static_cast<double>(last_draft_.size())) {
      if (++n_low_ >= kLowStreak) {
        slots_.clear();
        added_ = 0;
        n_low_ = 0;
      }
    } else {
      n_low_ = 0;
    }
    last_draft_.clear();
  }

  size_t n_;
  std::unordered_map<uint64_t, int32_t> slots_;  // slot -> the token that followed
  size_t added_ = 0;                             // n-grams starting before it are in the table
  bool started_ = false;                         // the first draft took the whole history
  size_t last_len_ = 0;                          // the history's length at the last draft
  std::vector<int32_t> last_draft_;
  int n_low_ = 0;
};

}  // namespace

std::unique_ptr<Drafter> make_ngram_mod(const SpeculativeOptions& o) {
  return std::make_unique<NgramMod>(o.ngram_mod_n_match);
}

}  // namespace tova::runtime
