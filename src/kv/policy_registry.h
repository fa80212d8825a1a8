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
#include "tova/policy_spec.h"

namespace tova::kv {

using PolicyFactory = std::function<std::unique_ptr<KvPolicy>(const PolicyArgs&)>;

struct PolicyInfo {
  std::string name;      // "sink"
  std::string arg_name;  // "N" if the policy takes ":N", else empty
  std::string help;      // one line
  bool bounded = true;   // false only for the unbounded topline
  bool arg_optional = false;   // "snapkv" and "snapkv:W" (the factory picks the default)
  // The argument names another policy, with its own argument if it takes one ("adakv:snapkv:16"):
  // a bounded policy with head_scores, which does not itself take a policy.
  bool arg_is_policy = false;
  // Made with PolicyArgs::head_wise, its objects give KvPolicy::head_scores (a valid BASE).
  bool head_scores = false;
  // A suffix to any bounded policy that evicts by itself: "BASE+NAME" ("tova+merge", "sink:4+merge";
  // not adakv, not another suffix). The factory gets BASE in PolicyArgs::base; "NAME" alone is
  // not a policy.
  bool suffix = false;
  // Checks budget and argument; an error says what is wrong.
  std::function<Status(int budget, std::optional<int> arg)> validate;
  // The layer's budget and pool (null: PolicyArgs::budget states per KV head, nothing else).
  std::function<LayerPlan(const PolicyArgs&)> plan;
  // How tests and docs spell it: every form worth running (default: the bare name). Tests that
  // must hold for every policy iterate over all_policy_examples(), never over a list of names.
  std::vector<std::string> examples;
  // false: a policy a test registers for itself (a spy), left out of all_policy_examples().
  bool listed = true;
  PolicyFactory make;
};

bool register_policy(PolicyInfo info);
const PolicyInfo* find_policy(std::string_view name);
// The policy a "NAME[:ARG]" or "BASE+SUFFIX" text names (the suffix's for the latter; nullptr if
// none): what it is, before parse_policy checks it with a budget.
const PolicyInfo* policy_of(std::string_view text);
// All registered policies, sorted by name.
std::vector<const PolicyInfo*> all_policies();
// Every registered policy in the forms it is worth running ("sink:4", "adakv:tova", ...),
// sorted by name: what every-policy tests iterate over.
std::vector<std::string> all_policy_examples();

// The layer plan of spec for these arguments (its PolicyInfo::plan, or the plain budget).
LayerPlan layer_plan(const PolicySpec& spec, const PolicyArgs& args);
// The policy holds a whole prompt and chooses at its end (LayerPlan::holds_prompt): a state
// continued with more tokens then differs from one that took them all as its prompt.
bool holds_prompt(const PolicySpec& spec);


}  // namespace tova::kv

#define TOVA_POLICY_CONCAT_INNER_(a, b) a##b
#define TOVA_POLICY_CONCAT_(a, b) TOVA_POLICY_CONCAT_INNER_(a, b)
// Registers a policy at static-initialisation time (tova_kv is linked whole-archive).
#define TOVA_REGISTER_POLICY(...)                                                 \
  static const bool TOVA_POLICY_CONCAT_(tova_policy_registered_, __LINE__) = \
      ::tova::kv::register_policy(__VA_ARGS__)
