// sink:N (Window+N, StreamingLLM's attention sinks): a window that never evicts positions
// 0..N-1.
#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class SinkPolicy final : public KvPolicy {
 public:
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<SinkPolicy>(*this); }
  explicit SinkPolicy(int n_sink) : n_sink_(n_sink) {}
  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    scoring::lowest_slots(v.pos, v.end(), nullptr, {.keep_below = n_sink_}, n, out);
    scoring::replicate_group0(v, n, out);
  }

 private:
  int64_t n_sink_;
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "sink",
    .arg_name = "N",
    .help = "window that keeps the first N positions forever (StreamingLLM; N=4 in the paper)",
    .validate = [](int budget, std::optional<int> arg) -> Status {
      if (!arg || *arg < 0) return make_error("sink:N needs N >= 0");
      if (*arg >= budget) {
        return make_error("sink:{} needs N < the budget k = {} (the window would be empty)",
                          *arg, budget);
      }
      return ok_status();
    },
    .examples = {"sink:4"},
    .make = [](const PolicyArgs& a) { return std::make_unique<SinkPolicy>(a.arg.value_or(4)); },
});

}  // namespace
}  // namespace tova::kv
