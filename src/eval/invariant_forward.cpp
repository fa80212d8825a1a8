#include "eval/invariant_forward.h"

#include <algorithm>

#include "kernels/matmul.h"
#include "runtime/sequence.h"
#include "tova/options.h"

namespace tova::eval {

namespace {
constexpr int kRows = static_cast<int>(kernels::kMatmulBatchInvariantTokens);
}

Result<InvariantForward> InvariantForward::create(const model::Model& m) {
  TOVA_ASSIGN_OR_RETURN(const CacheOptions co, parse_cache_options("full", 0));
  TOVA_ASSIGN_OR_RETURN(auto empty, runtime::make_state(m, co, kRows));
  return InvariantForward(m, std::move(empty));
}

Result<int> InvariantForward::run(runtime::ForwardBatch& batch, ThreadPool& pool,
                                  model::ForwardScratch& scratch, std::vector<float>& logits) {
  const size_t n_vocab = static_cast<size_t>(m_->config().n_vocab);
  const int n_logits = batch.n_rows();
  const int n = static_cast<int>(batch.n_tokens());
  // Rows that ask for logits count twice (layers and output projection): padding them lifts
  // both sizes at once.
  const int pad = n_logits > 0 ? std::max(0, kRows - n_logits) : std::max(0, kRows - n);
  logits.resize((static_cast<size_t>(n_logits) + (n_logits > 0 ? pad : 0)) * n_vocab);
  if (pad == 0) {
    TOVA_RETURN_IF_ERROR(batch.run(*m_, pool, scratch, logits.data()));
    return 0;
  }
  // A fresh copy each call: the padding's rows see only each other, at positions 0 .. pad-1.
  const std::unique_ptr<kv::MultiState> scratch_seq = empty_->clone();
  padded_ = batch;
  const std::vector<int32_t> zeros(static_cast<size_t>(pad), 0);
  padded_.add(*scratch_seq, zeros,
              n_logits > 0 ? runtime::LogitsAt::kEach : runtime::LogitsAt::kNone);
  const Status fwd = padded_.run(*m_, pool, scratch, logits.data());
  padded_.clear();  // it points at scratch_seq
  TOVA_RETURN_IF_ERROR(fwd);
  return pad;
}

}  // namespace tova::eval
