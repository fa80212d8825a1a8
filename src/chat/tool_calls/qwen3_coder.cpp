// Qwen3-Coder (and Qwen3.5) calls: XML-like, one parameter per element, values as text,
//   <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>
// A value is a JSON string when the tool's schema types the parameter "string" (or when it is
// not JSON at all), else the JSON it spells (numbers, booleans, objects, arrays).
#include "chat/tool_calls/common.h"

namespace tova::chat {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

// The schema of parameter `p` of tool `name`, or null.
ordered_json param_schema(const std::vector<ToolDefinition>& tools, const std::string& name,
                          const std::string& p) {
  for (const ToolDefinition& t : tools) {
    if (t.name != name || t.parameters.empty()) continue;
    const auto s = parse_object(t.parameters);
    if (s && s->contains("properties") && (*s)["properties"].is_object() &&
        (*s)["properties"].contains(p)) {
      return (*s)["properties"][p];
    }
  }
  return nullptr;
}

bool typed_string(const ordered_json& schema) {
  return schema.is_object() && schema.contains("type") && schema["type"] == "string";
}

// One value's text as JSON: one newline on each side belongs to the syntax.
ordered_json value_of(std::string_view v, const ordered_json& schema) {
  if (v.starts_with('\n')) v.remove_prefix(1);
  if (v.ends_with('\n')) v.remove_suffix(1);
  if (!typed_string(schema)) {
    auto j = parse_json(v);
    if (!j.is_discarded()) return j;
  }
  return valid_utf8(v);  // a broken character in a value: replaced, the call kept
}

// The call inside <tool_call>...</tool_call>, or none when it is not one.
std::optional<ToolCall> read_call(std::string_view body, const std::vector<ToolDefinition>& tools) {
  body = trim(body);
  constexpr std::string_view kFn = "<function=";
  if (!body.starts_with(kFn)) return std::nullopt;
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return std::nullopt;
  ToolCall call{.name = valid_utf8(trim(body.substr(kFn.size(), name_end - kFn.size())))};
  if (call.name.empty()) return std::nullopt;
  std::string_view rest = trim(body.substr(name_end + 1));
  ordered_json args = ordered_json::object();
  constexpr std::string_view kParam = "<parameter=";
  constexpr std::string_view kParamEnd = "</parameter>";
  while (rest.starts_with(kParam)) {
    const size_t pn = rest.find('>');
    if (pn == std::string_view::npos) return std::nullopt;
    const std::string p = valid_utf8(trim(rest.substr(kParam.size(), pn - kParam.size())));
    const size_t end = rest.find(kParamEnd, pn + 1);
    if (end == std::string_view::npos) return std::nullopt;
    args[p] = value_of(rest.substr(pn + 1, end - pn - 1), param_schema(tools, call.name, p));
    rest = trim(rest.substr(end + kParamEnd.size()));
  }
  if (rest != "</function>") return std::nullopt;
  call.arguments = json_text(args);
  return call;
}

// A GBNF expression for one parameter's value text: raw text for a plain string (no '<', which
// would start the closing tag), the literal alternatives of a string enum, else the JSON the
// schema describes (its own rules, prefixed).
Result<std::string> value_expr(const ordered_json& schema, const std::string& prefix,
                               std::string& rules) {
  if (typed_string(schema)) {
    for (const auto& [k, v] : schema.items()) {
      if (k != "type" && k != "description" && k != "title" && k != "enum") {
        return make_error("'{}' on a string parameter is not supported in this format", k);
      }
    }
    if (!schema.contains("enum")) return std::string("[^<]*");
    std::string alts = "(";
    for (const auto& e : schema["enum"]) {
      if (!e.is_string()) return make_error("a string parameter's enum holds a non-string");
      alts += (alts.size() > 1 ? " | " : "") + gbnf_literal(e.get<std::string>());
    }
    return alts + ")";
  }
  auto g = argument_rules(ToolDefinition{.parameters = json_text(schema)}, prefix);
  if (!g.ok()) return make_error("{}", g.message());
  rules += *g;
  return prefix + "root";
}

}  // namespace

ParsedToolCalls parse_qwen3_coder(std::string_view text, const std::vector<ToolDefinition>& tools) {
  return parse_tagged_calls(text, kOpen, kClose,
                            [&](std::string_view body) { return read_call(body, tools); });
}

Result<std::string> qwen3_coder_grammar(const std::vector<ToolDefinition>& tools, bool parallel) {
  if (tools.empty()) return make_error("tools: no tool to call");
  std::string rules;
  std::string alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolDefinition& t = tools[i];
    const auto schema = t.parameters.empty() ? ordered_json::object()
                                             : parse_object(t.parameters).value_or(nullptr);
    if (!schema.is_object())
      return make_error("tools[{}] ('{}'): parameters: not an object", i, t.name);
    std::vector<std::string> required;
    if (schema.contains("required") && schema["required"].is_array()) {
      for (const auto& r : schema["required"]) {
        if (r.is_string()) required.push_back(r.get<std::string>());
      }
    }
    std::string seq = gbnf_literal("<tool_call>\n<function=" + t.name + ">\n");
    if (schema.contains("properties") && schema["properties"].is_object()) {
      size_t k = 0;
      for (const auto& [p, ps] : schema["properties"].items()) {
        auto v = value_expr(ps, fmt::format("t{}p{}-", i, k++), rules);
        if (!v.ok()) {
          return make_error("tools[{}] ('{}'): parameters: /properties/{}: {}", i, t.name, p,
                            v.message());
        }
        const bool req = std::find(required.begin(), required.end(), p) != required.end();
        seq += fmt::format(" ({} {} {}){}", gbnf_literal(fmt::format("<parameter={}>\n", p)), *v,
                           gbnf_literal("\n</parameter>\n"), req ? "" : "?");
      }
    }
    seq += fmt::format(" {}", gbnf_literal("</function>\n</tool_call>"));
    alts += fmt::format("{}({})", i > 0 ? " | " : "", seq);
  }
  std::string root = "root ::= call";
  if (parallel) root += fmt::format(" ({} call)*", gbnf_literal("\n"));
  return fmt::format("{}\ncall ::= {}\n{}", root, alts, rules);
}

}  // namespace tova::chat
