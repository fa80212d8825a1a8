// A KV policy as a user names it ("tova", "sink:4", "adakv:snapkv:16") with its budget, once
// validated against the library's registry (kv/policy_registry.h: parse_policy makes it).
#pragma once

#include <optional>
#include <string>

namespace tova::kv {

struct PolicyInfo;  // the registry's entry
struct PolicyArgs;  // what a policy factory receives

// A validated "NAME[:ARG]" with its budget, as given on the command line.
struct PolicySpec {
  std::string name;
  std::optional<int> arg;
  // PolicyInfo::arg_is_policy or suffix: the BASE as given ("snapkv:16"), validated
  std::string base;
  int budget = 0;  // ignored (0) for unbounded policies
  const PolicyInfo* info = nullptr;

  std::string label() const;  // "sink:4", "adakv:tova", "tova+merge" (no budget)
  bool bounded() const;       // false for `full` (and an empty spec)
  // The arguments a factory receives (layer and shape fields left at their defaults).
  PolicyArgs args() const;
};

}  // namespace tova::kv
