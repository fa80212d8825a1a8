// kvzip's side of its scoring pass (runtime/kvzip_pass.h drives it; the rule is in
// docs/POLICIES-EXTRA.md): a pass marks where the reconstruction starts, the rows it feeds
// record, for every held state, the largest attention it receives, and the cut hands those
// scores to the state being cut.
#pragma once

#include <cstdint>

#include "kv/kv_policy.h"
#include "kv/policies/scoring.h"

namespace tova::kv {

class KvzipScorer {
 public:
  virtual ~KvzipScorer() = default;
  // From now on every observed query row scores the states at positions below recon_start
  // (what was held before the reconstruction): each keeps the largest probability it receives
  // from any query head of its KV group and any row. Earlier scores are cleared.
  virtual void begin_pass(int64_t recon_start) = 0;
  // The pass's scores, [n_head_kv][n_slot] (0 where nothing was scored).
  virtual const scoring::SlotTable& pass_scores() const = 0;
  // The scores the next eviction ranks by (from the pass run on a copy of this layer: the same
  // slots hold the same states).
  virtual void set_cut_scores(const scoring::SlotTable& scores) = 0;
};

// The scorer of a kvzip policy; null for any other policy.
KvzipScorer* kvzip_scorer(KvPolicy& policy);

}  // namespace tova::kv
