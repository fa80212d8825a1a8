// A KV policy as a user names it ("tova", "sink:4", "adakv:snapkv:16") with its budget, once
// validated against the library's registry (parse_policy makes it), and the registry as a user
// chooses among it. The registry itself (factories, plans) is the library's
// (kv/policy_registry.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tova/result.h"

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

// Parses and validates "NAME[:ARG]" or "BASE+SUFFIX" with its budget; errors list the choices.
Result<PolicySpec> parse_policy(std::string_view text, int budget);
// "full, h2o, h2o-head, sink:N, tova, tova-head, window, BASE+merge"
std::string policy_choices();

// One registered policy as front-ends list it (help texts, the server's /v1/models).
struct PolicyDescription {
  std::string name;      // "sink"
  std::string arg_name;  // "N" if it takes ":N", else empty
  std::string help;      // one line
  bool bounded = true;   // false only for the unbounded topline
  bool suffix = false;   // spelled "BASE+NAME"
  // Every form worth running ("sink:4", "adakv:tova"); the bare name when it has no argument.
  std::vector<std::string> examples;
  std::string form() const;  // "sink:N", "tova", "BASE+merge"
};
// The listed policies (not those a test registers for itself), sorted by name.
std::vector<PolicyDescription> describe_policies();

}  // namespace tova::kv
