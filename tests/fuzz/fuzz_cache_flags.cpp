// Harness: the --kv-policy / --kv-budget / --prefill / --kv-type parsers. The input is split at
// '\n' into a policy, a prefill mode and a kv type; the first four bytes are the budget. What
// parses must round-trip through its label, and a multi-state is created from it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "kv/multi_state.h"
#include "kv/policy_registry.h"
#include "runtime/sequence.h"

namespace {

std::string_view next_field(std::string_view& rest) {
  const size_t nl = rest.find('\n');
  const std::string_view f = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tova;
  int32_t budget = 0;
  if (size >= sizeof(budget)) {
    std::memcpy(&budget, data, sizeof(budget));
    data += sizeof(budget);
    size -= sizeof(budget);
  }
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string_view policy_text = next_field(rest);
  const std::string_view prefill_text = next_field(rest);
  const std::string_view kv_text = next_field(rest);

  auto policy = kv::parse_policy(policy_text, budget);
  auto prefill = tova::parse_prefill(prefill_text);
  auto kv_type = tova::parse_kv_format(kv_text);
  if (prefill.ok()) {
    auto again = tova::parse_prefill(prefill->label());
    if (!again.ok() || again->chunk != prefill->chunk || again->inf != prefill->inf) {
      __builtin_trap();
    }
  }
  // A format's label parses back to the same format.
  if (kv_type.ok()) {
    auto again = tova::parse_kv_format(kv_type->label());
    if (!again.ok() || !(*again == *kv_type)) __builtin_trap();
  }
  if (!policy.ok()) return 0;
  auto again = kv::parse_policy(policy->label(), policy->budget);
  if (!again.ok() || again->name != policy->name || again->arg != policy->arg ||
      again->budget != policy->budget) {
    __builtin_trap();
  }
  // A tiny multi-state (1 layer, 2 heads, head size 4) for what parsed; budgets a hostile flag
  // sets beyond this cap are the caller's memory to spend (the CLI's --kv-budget), not a bug.
  constexpr int kMaxBudget = 4096;
  if (policy->budget > kMaxBudget) return 0;
  const int max_new = prefill.ok() && prefill->chunk > 0 ? std::min(prefill->chunk, 64) : 1;
  auto state = kv::MultiState::create({.n_layer = 1,
                                       .n_head = 2,
                                       .n_head_kv = 1,
                                       .head_dim = 8,
                                       .policy = *policy,
                                       .kv_type = kv_type.ok() ? *kv_type : KvFormat(),
                                       .max_new = max_new,
                                       .initial_slots = 4});
  (void)state;  // a policy's own constraints (e.g. sink:N >= budget) may reject it
  return 0;
}
