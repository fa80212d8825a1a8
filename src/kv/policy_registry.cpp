#include "kv/policy_registry.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "core/field_names.h"

namespace tova::kv {
namespace {

std::map<std::string, PolicyInfo, std::less<>>& registry() {
  static std::map<std::string, PolicyInfo, std::less<>> r;
  return r;
}

// The policies an arg_is_policy policy may take.
std::string base_choices() {
  std::string s;
  for (const auto& [name, info] : registry()) {
    if (!info.bounded || !info.head_scores || info.arg_is_policy) continue;
    if (!s.empty()) s += ", ";
    s += name;
  }
  return s;
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

std::string PolicyDescription::form() const {
  if (suffix) return "BASE+" + name;
  return arg_name.empty() ? name : name + ":" + arg_name;
}

std::vector<PolicyDescription> describe_policies() {
  std::vector<PolicyDescription> out;
  for (const PolicyInfo* p : all_policies()) {
    if (!p->listed) continue;
    out.push_back({.name = p->name,
                   .arg_name = p->arg_name,
                   .help = p->help,
                   .bounded = p->bounded,
                   .suffix = p->suffix,
                   .examples = p->examples.empty() ? std::vector<std::string>{p->name}
                                                   : p->examples});
  }
  return out;
}

std::string policy_choices() {
  std::string s;
  for (const PolicyInfo* p : all_policies()) {
    if (!s.empty()) s += ", ";
    if (p->suffix) {
      s += "BASE+" + p->name;
      continue;
    }
    s += p->name;
    if (!p->arg_name.empty()) s += p->arg_optional ? "[:" + p->arg_name + "]" : ":" + p->arg_name;
  }
  return s;
}

std::vector<std::string> all_policy_examples() {
  std::vector<std::string> out;
  for (const PolicyInfo* p : all_policies()) {
    if (!p->listed) continue;
    if (p->examples.empty()) {
      out.push_back(p->name);
    } else {
      out.insert(out.end(), p->examples.begin(), p->examples.end());
    }
  }
  return out;
}

bool PolicySpec::bounded() const { return info != nullptr && info->bounded; }

std::string PolicySpec::label() const {
  if (info != nullptr && info->suffix) return base + "+" + name;
  if (!base.empty()) return name + ":" + base;
  return arg ? name + ":" + std::to_string(*arg) : name;
}

PolicyArgs PolicySpec::args() const {
  return PolicyArgs{.budget = budget, .arg = arg, .base = base};
}

bool holds_prompt(const PolicySpec& spec) {
  return spec.bounded() && layer_plan(spec, spec.args()).holds_prompt;
}

LayerPlan layer_plan(const PolicySpec& spec, const PolicyArgs& args) {
  if (spec.info != nullptr && spec.info->plan) return spec.info->plan(args);
  return LayerPlan{.budget = args.budget};
}

namespace {

// "BASE+NAME" for a registered suffix NAME, or nullptr.
const PolicyInfo* suffix_of(std::string_view text) {
  for (const auto& [name, info] : registry()) {
    if (!info.suffix || text.size() <= name.size() + 1) continue;
    if (text.ends_with(name) && text[text.size() - name.size() - 1] == '+') return &info;
  }
  return nullptr;
}

}  // namespace

const PolicyInfo* policy_of(std::string_view text) {
  if (const PolicyInfo* sfx = suffix_of(text)) return sfx;
  return find_policy(text.substr(0, text.find(':')));
}

namespace {

// BASE+SUFFIX (tova+merge): the suffix over a base that evicts by itself.
Result<PolicySpec> parse_suffixed(std::string_view text, const PolicyInfo* sfx, int budget) {
  const std::string_view b = text.substr(0, text.size() - sfx->name.size() - 1);
  // A base that is itself suffixed or shares a budget is refused before it is parsed.
  const PolicyInfo* base_info = find_policy(b.substr(0, b.find(':')));
  if (suffix_of(b) != nullptr || (base_info != nullptr && base_info->arg_is_policy)) {
    return make_error("KV policy '{}': '+{}' takes a policy that evicts by itself, not '{}'",
                      text, sfx->name, b);
  }
  auto base = parse_policy(b, budget);
  if (!base.ok()) return make_error("KV policy '{}': {}", text, base.message());
  if (!base->bounded()) {
    return make_error("KV policy '{}': '{}' never evicts: nothing to {}", text, b, sfx->name);
  }
  PolicySpec spec;
  spec.name = sfx->name;
  spec.info = sfx;
  spec.base = std::string(b);
  spec.budget = base->budget;
  if (sfx->validate) TOVA_RETURN_IF_ERROR(sfx->validate(spec.budget, spec.arg));
  return spec;
}

// NAME:BASE for a policy whose argument is a policy (adakv:tova): a base with head-wise scores.
Status parse_base_arg(std::string_view text, size_t colon, int budget, PolicySpec& spec) {
  const std::string_view b =
      colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (b.empty()) {
    return make_error("KV policy '{}' needs a base policy: {}:{} (valid bases: {})", spec.name,
                      spec.name, spec.info->arg_name, base_choices());
  }
  // A base that takes a policy itself is refused before it is parsed: no recursion.
  const PolicyInfo* base_info = find_policy(b.substr(0, b.find(':')));
  if (base_info != nullptr && base_info->arg_is_policy) {
    return make_error("KV policy '{}': '{}' has no head-wise scores to share a budget by "
                      "(valid bases: {})",
                      text, b.substr(0, b.find(':')), base_choices());
  }
  auto base = parse_policy(b, budget < 1 ? 1 : budget);
  if (!base.ok()) return make_error("KV policy '{}': {}", text, base.message());
  if (!base->bounded() || !base->info->head_scores || base->info->arg_is_policy) {
    return make_error("KV policy '{}': '{}' has no head-wise scores to share a budget by "
                      "(valid bases: {})",
                      text, b, base_choices());
  }
  spec.base = std::string(b);
  return ok_status();
}

// NAME:N, NAME or NAME:OPTIONAL: the integer argument the policy takes, if any.
Status parse_int_arg(std::string_view text, size_t colon, PolicySpec& spec) {
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
  } else if (!spec.info->arg_name.empty() && !spec.info->arg_optional) {
    return make_error("KV policy '{}' needs an argument: {}:{} (valid: {})", spec.name,
                      spec.name, spec.info->arg_name, policy_choices());
  }
  return ok_status();
}

}  // namespace

Result<PolicySpec> parse_policy(std::string_view text, int budget) {
  if (const PolicyInfo* sfx = suffix_of(text)) return parse_suffixed(text, sfx, budget);
  PolicySpec spec;
  const size_t colon = text.find(':');
  spec.name = std::string(text.substr(0, colon));
  spec.info = find_policy(spec.name);
  if (spec.info == nullptr) {
    return make_error("unknown KV policy '{}' (valid: {})", text, policy_choices());
  }
  if (spec.info->suffix) {
    return make_error("KV policy '{}' is a suffix: BASE+{} (e.g. tova+{})", text, spec.name,
                      spec.name);
  }
  if (spec.info->arg_is_policy) {
    TOVA_RETURN_IF_ERROR(parse_base_arg(text, colon, budget, spec));
  } else {
    TOVA_RETURN_IF_ERROR(parse_int_arg(text, colon, spec));
  }
  if (spec.info->bounded) {
    if (budget < 1) {
      return make_error("{}: KV policy '{}' needs at least 1 state, got {}", field::kKvBudget,
                        spec.label(), budget);
    }
    spec.budget = budget;
  }
  if (spec.info->validate) TOVA_RETURN_IF_ERROR(spec.info->validate(spec.budget, spec.arg));
  return spec;
}

}  // namespace tova::kv
