// SnapKV's choice (docs/POLICIES-EXTRA.md), for the policies built on it: `snapkv` and
// `snapkv+tova` (snapkv.cpp), `pyramidkv` (pyramidkv.cpp, the same choice under per-layer
// budgets).
#pragma once

#include <memory>

#include "kv/kv_policy.h"

namespace tova::kv {

inline constexpr int kSnapWindow = 32;  // W: observation window and recent states kept
inline constexpr int kSnapKernel = 7;   // max-pooling width over neighbouring held states

// What decides after the prompt's cut.
enum class SnapDecode {
  kWindow,  // the W most recent states slide over the generated tokens; the chosen ones stay
  kTova,    // each KV head evicts the state its own query heads attend to least (tova-head)
};

// args.budget is the layer's budget; args.arg the W (kSnapWindow if absent).
std::unique_ptr<KvPolicy> make_snapkv(const PolicyArgs& args, SnapDecode decode);

// Checks a W given as snapkv:W (or pyramidkv:W).
Status validate_snap_window(std::optional<int> w);

}  // namespace tova::kv
