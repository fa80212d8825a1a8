#include "runtime/forward_batch.h"

#include <algorithm>

namespace tova::runtime {

int prompt_step(const kv::MultiState& state, int n_batch) {
  return state.max_new() > 1 ? state.max_new() : std::max(1, n_batch);
}

void ForwardBatch::clear() {
  tokens_.clear();
  followers_.clear();
  n_rows_ = 0;
}

int ForwardBatch::add(kv::MultiState& state, std::span<const int32_t> tokens, LogitsAt at) {
  int first = -1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool logits =
        at == LogitsAt::kEach || (at == LogitsAt::kLast && i + 1 == tokens.size());
    if (logits && first < 0) first = n_rows_;
    n_rows_ += logits;
    tokens_.push_back({.token = tokens[i], .state = &state, .logits = logits});
  }
  return first;
}

int ForwardBatch::add_rows(kv::MultiState& state, const float* rows, int n, int n_embd,
                           bool non_causal, LogitsAt at) {
  int first = -1;
  for (int i = 0; i < n; ++i) {
    const bool logits = at == LogitsAt::kEach || (at == LogitsAt::kLast && i + 1 == n);
    if (logits && first < 0) first = n_rows_;
    n_rows_ += logits;
    tokens_.push_back({.state = &state,
                       .logits = logits,
                       .embd = rows + static_cast<size_t>(i) * n_embd,
                       .sees_ahead = non_causal ? n - 1 - i : 0});
  }
  return first;
}

void ForwardBatch::follow(kv::MultiState& leader, kv::MultiState& follower) {
  followers_.push_back({.leader = &leader, .state = &follower});
}

Status ForwardBatch::run(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
                         float* out, float* hidden) {
  n_vocab_ = static_cast<size_t>(m.config().n_vocab);
  if (out == nullptr) {
    logits_.resize(static_cast<size_t>(n_rows_) * n_vocab_);
    out = logits_.data();
  }
  return m.forward(tokens_, pool, scratch, out, followers_, hidden);
}

}  // namespace tova::runtime
