// The one list of policy names. Each policy file registers itself (TOVA_REGISTER_POLICY), so
// adding a policy touches exactly one file; nothing else in the code base names policies.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "kv/kv_policy.h"

namespace tova::kv {

using PolicyFactory = std::function<std::unique_ptr<KvPolicy>(const PolicyArgs&)>;

struct PolicyInfo {
  std::string name;      // "sink"
  std::string arg_name;  // "N" if the policy takes ":N", else empty
  std::string help;      // one line
  bool bounded = true;   // false only for the unbounded topline
  // Checks budget and argument; an error says what is wrong.
  std::function<Status(int budget, std::optional<int> arg)> validate;
  PolicyFactory make;
};

bool register_policy(PolicyInfo info);
const PolicyInfo* find_policy(std::string_view name);
// All registered policies, sorted by name.
std::vector<const PolicyInfo*> all_policies();
// "full, h2o, h2o-head, sink:N, tova, tova-head, window"
std::string policy_choices();

// A validated "NAME[:ARG]" with its budget, as given on the command line.
struct PolicySpec {
  std::string name;
  std::optional<int> arg;
  int budget = 0;  // ignored (0) for unbounded policies
  const PolicyInfo* info = nullptr;

  std::string label() const;  // "sink:4" (no budget)
  bool bounded() const { return info != nullptr && info->bounded; }
};

// Parses and validates; errors list the valid choices.
Result<PolicySpec> parse_policy(std::string_view text, int budget);

}  // namespace tova::kv

#define TOVA_POLICY_CONCAT_INNER_(a, b) a##b
#define TOVA_POLICY_CONCAT_(a, b) TOVA_POLICY_CONCAT_INNER_(a, b)
// Registers a policy at static-initialisation time (tova_kv is linked whole-archive).
#define TOVA_REGISTER_POLICY(...)                                                 \
  static const bool TOVA_POLICY_CONCAT_(tova_policy_registered_, __LINE__) = \
      ::tova::kv::register_policy(__VA_ARGS__)
