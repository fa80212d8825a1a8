// window: evict the oldest state (FIFO).
#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class WindowPolicy final : public KvPolicy {
 public:
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<WindowPolicy>(*this); }
  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    scoring::lowest_slots(v.pos, v.end(), nullptr, {}, n, out);
    scoring::replicate_group0(v, n, out);
  }
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "window",
    .help = "evict the oldest state (sliding window of the k most recent tokens)",
    .make = [](const PolicyArgs&) { return std::make_unique<WindowPolicy>(); },
});

}  // namespace
}  // namespace tova::kv
