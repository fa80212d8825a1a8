// full: never evicts; the unbounded transformer, the topline every other policy is judged by.
#include "core/check.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class FullPolicy final : public KvPolicy {
 public:
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<FullPolicy>(*this); }
  void choose_evictions(const SlotView&, int, int32_t*) override {
    TOVA_CHECK(false && "the full policy never holds more than its budget");
  }
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "full",
    .help = "never evict: the unbounded cache (topline); the kv budget is ignored",
    .bounded = false,
    .make = [](const PolicyArgs&) { return std::make_unique<FullPolicy>(); },
});

}  // namespace
}  // namespace tova::kv
