// The one feeding loop: every caller that feeds tokens to the model (sessions through the batch
// scheduler, runtime::feed, the kvzip scoring pass, the draft model, every eval experiment)
// gathers one forward call's tokens in a ForwardBatch and runs it here. The chunk rule
// (prompt_step), followers and where each sequence's logits rows land are written once, in this
// file; callers decide only which sequences take how many tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "model/model.h"

namespace tova::runtime {

// How many of its pending prompt tokens a sequence takes in one forward call: a chunked
// sequence (chunk:C, max_new C > 1) a whole chunk of C, since its chunk boundaries decide its
// evictions (spec/POLICIES.md); an exact one any micro-batch, here at most n_batch (>= 1).
int prompt_step(const kv::MultiState& state, int n_batch);

// Which of the tokens added for a sequence receive logits rows.
enum class LogitsAt {
  kNone,  // none (a pass that only fills the multi-state)
  kLast,  // the last token added
  kEach,  // every token added (teacher-forced scoring, verify steps, all_logits)
};

class ForwardBatch {
 public:
  void clear();
  // Appends `tokens` of one sequence (fed in order, after what the state holds). Returns the
  // logits row of the first of them that receives one, -1 if none does; rows are numbered in
  // the order tokens were added.
  int add(kv::MultiState& state, std::span<const int32_t> tokens, LogitsAt at);
  // Appends an image's n rows of n_embd floats (the batch points at them: they must outlive
  // run()) as tokens of one sequence; with non_causal each sees the image's later tokens
  // (model::BatchToken::sees_ahead), so the image must be added whole. Logits as add().
  int add_rows(kv::MultiState& state, const float* rows, int n, int n_embd, bool non_causal,
               LogitsAt at);
  // `follower` rides along with `leader` (a sequence of this batch) through this call: it is at
  // the leader's position and receives its keys and values (model::Follower); its logits are
  // the leader's rows.
  void follow(kv::MultiState& leader, kv::MultiState& follower);

  bool empty() const { return tokens_.empty(); }
  size_t n_tokens() const { return tokens_.size(); }
  int n_rows() const { return n_rows_; }
  std::span<const model::BatchToken> tokens() const { return tokens_; }

  // One forward call over the batch. The logits rows go to `out` ([n_rows][n_vocab]) when it is
  // given, else to the batch's own buffer (row()). hidden: Model::forward's final-normed rows
  // ([n_tokens][n_embd]), for a drafter that reads them.
  Status run(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
             float* out = nullptr, float* hidden = nullptr);
  // Row r of the batch's own buffer after run() without `out`.
  const float* row(int r) const { return logits_.data() + static_cast<size_t>(r) * n_vocab_; }

 private:
  std::vector<model::BatchToken> tokens_;
  std::vector<model::Follower> followers_;
  std::vector<float> logits_;
  int n_rows_ = 0;
  size_t n_vocab_ = 0;
};

}  // namespace tova::runtime
