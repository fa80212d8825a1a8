#include "kv/policy_registry.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace tova::kv {
namespace {

std::map<std::string, PolicyInfo, std::less<>>& registry() {
  static std::map<std::string, PolicyInfo, std::less<>> r;
  return r;
}

}  // namespace

bool register_policy(PolicyInfo info) {
  std::string name = info.name;
  registry().emplace(std::move(name), std::move(info));
  return true;
}

const PolicyInfo* find_policy(std::string_view name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const PolicyInfo*> all_policies() {
  std::vector<const PolicyInfo*> out;
  for (const auto& [name, info] : registry()) out.push_back(&info);
  return out;
}

std::string policy_choices() {
  std::string s;
  for (const PolicyInfo* p : all_policies()) {
    if (!s.empty()) s += ", ";
    s += p->name;
    if (!p->arg_name.empty()) s += ":" + p->arg_name;
  }
  return s;
}

std::string PolicySpec::label() const {
  return arg ? name + ":" + std::to_string(*arg) : name;
}

Result<PolicySpec> parse_policy(std::string_view text, int budget) {
  PolicySpec spec;
  const size_t colon = text.find(':');
  spec.name = std::string(text.substr(0, colon));
  spec.info = find_policy(spec.name);
  if (spec.info == nullptr) {
    return make_error("unknown KV policy '{}' (valid: {})", text, policy_choices());
  }
  if (colon != std::string_view::npos) {
    if (spec.info->arg_name.empty()) {
      return make_error("KV policy '{}' takes no argument (valid: {})", spec.name,
                        policy_choices());
    }
    const std::string_view a = text.substr(colon + 1);
    int v = 0;
    auto [p, ec] = std::from_chars(a.data(), a.data() + a.size(), v);
    if (ec != std::errc() || p != a.data() + a.size() || a.empty()) {
      return make_error("KV policy '{}': '{}' is not an integer {}", spec.name, a,
                        spec.info->arg_name);
    }
    spec.arg = v;
  } else if (!spec.info->arg_name.empty()) {
    return make_error("KV policy '{}' needs an argument: {}:{} (valid: {})", spec.name,
                      spec.name, spec.info->arg_name, policy_choices());
  }
  if (spec.info->bounded) {
    if (budget < 1) {
      return make_error("KV policy '{}' needs a budget of at least 1 state (--kv-budget), got {}",
                        spec.label(), budget);
    }
    spec.budget = budget;
  }
  if (spec.info->validate) TOVA_RETURN_IF_ERROR(spec.info->validate(spec.budget, spec.arg));
  return spec;
}

}  // namespace tova::kv
