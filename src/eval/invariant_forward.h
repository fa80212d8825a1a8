// Forward calls whose every row comes out the same bits whatever else the call holds. The
// matmul computes a token's row with one arithmetic only in calls of at least
// kernels::kMatmulBatchInvariantTokens tokens (kernels/matmul.h); smaller calls take row
// kernels that sum in another order. A sequence run alone (one token per decoding step, a short
// answer teacher-forced) and the same sequence in a batch of many would then differ in their
// last bits: the answer NLL of `tova eval --no-batch` against the batched run. Padding every
// call with rows of a scratch sequence to that many tokens, and to that many logits rows
// whenever it asks for logits (the output projection is a matmul over those rows only), keeps
// each real row's arithmetic independent of the batch.
// Dense feed-forward layers only: a mixture-of-experts layer multiplies each expert's routed
// tokens in a call of their own, whose size still depends on the batch.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "model/model.h"
#include "runtime/forward_batch.h"

namespace tova::eval {

class InvariantForward {
 public:
  static Result<InvariantForward> create(const model::Model& m);

  // batch.run(...) padded at its end: logits is resized to hold the batch's logits rows (in
  // the order added, first) and the padding's after them. Returns the padding rows added.
  Result<int> run(runtime::ForwardBatch& batch, ThreadPool& pool,
                  model::ForwardScratch& scratch, std::vector<float>& logits);

 private:
  explicit InvariantForward(const model::Model& m, std::unique_ptr<kv::MultiState> empty)
      : m_(&m), empty_(std::move(empty)) {}
  const model::Model* m_;
  std::unique_ptr<kv::MultiState> empty_;  // the scratch sequence, cloned fresh for each call
  runtime::ForwardBatch padded_;
};

}  // namespace tova::eval
