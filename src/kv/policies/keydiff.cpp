// keydiff (KeyDiff, Park et al. 2025; exact rule in docs/POLICIES-EXTRA.md): each KV head evicts
// the state whose key points most nearly along the mean direction of its held keys (cosine
// similarity to the mean of the unit-length keys, computed by the cache): keys unlike the
// others are kept. No attention probabilities are needed.
#include <vector>

#include "core/check.h"
#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class KeyDiffPolicy final : public KvPolicy {
 public:
  std::unique_ptr<KvPolicy> clone() const override {
    return std::make_unique<KeyDiffPolicy>(*this);
  }
  bool needs_key_similarity() const override { return true; }

  bool head_scores(const SlotView& v, double* out) override {
    TOVA_CHECK(v.key_similarity != nullptr);
    for (int g = 0; g < v.n_head_kv; ++g) {
      const size_t off = static_cast<size_t>(g) * v.n_slot;
      for (int s = 0; s < v.end(); ++s) out[off + s] = -v.key_similarity[off + s];
    }
    return true;
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    scoring::choose_by_head_scores(*this, v, n, out);
  }
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "keydiff",
    .help = "each KV head evicts the state whose key is most similar (cosine) to the mean of its "
            "held keys",
    .head_scores = true,
    .make = [](const PolicyArgs&) { return std::make_unique<KeyDiffPolicy>(); },
});

}  // namespace
}  // namespace tova::kv
