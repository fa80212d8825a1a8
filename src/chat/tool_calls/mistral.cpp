// Mistral calls after the [TOOL_CALLS] token, in either of the two forms its templates render:
//   Nemo (v3):        [TOOL_CALLS][{"name": "get_weather", "arguments": {...}, "id": "abc123xyz"}]
//   Small 3.2 (v7+):  [TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{...}   ([CALL_ID] optional)
// Text before the first [TOOL_CALLS] is content.
#include "chat/tool_calls/common.h"

namespace tova::chat {
namespace {

constexpr std::string_view kCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// The calls of one [TOOL_CALLS] block starting at `rest`; `used` gets the bytes they take.
std::optional<std::vector<ToolCall>> read_block(std::string_view rest, size_t& used) {
  std::vector<ToolCall> calls;
  const std::string_view t = rest;
  size_t p = t.find_first_not_of(" \n");
  if (p == std::string_view::npos) return std::nullopt;
  if (t[p] == '[') {  // a JSON list of calls
    const size_t end = json_end(t, p);
    if (end == std::string_view::npos) return std::nullopt;
    auto list = parse_json(t.substr(p, end - p));
    if (list.is_discarded() || !list.is_array() || list.empty()) return std::nullopt;
    for (const auto& o : list) {
      if (!o.is_object()) return std::nullopt;
      auto call = call_from_object(o, "arguments");
      if (!call) return std::nullopt;
      calls.push_back(*call);
    }
    used = end;
    return calls;
  }
  // NAME [CALL_ID]ID [ARGS]{...}
  size_t q = p;
  while (q < t.size() && name_char(t[q])) ++q;
  if (q == p) return std::nullopt;
  ToolCall call{.name = std::string(t.substr(p, q - p))};
  if (t.substr(q).starts_with(kCallId)) {
    const size_t id_start = q + kCallId.size();
    const size_t id_end = t.find(kArgs, id_start);
    if (id_end == std::string_view::npos) return std::nullopt;
    call.id = valid_utf8(trim(t.substr(id_start, id_end - id_start)));
    q = id_end;
  }
  if (!t.substr(q).starts_with(kArgs)) return std::nullopt;
  const size_t a = q + kArgs.size();
  const size_t end = json_end(t, a);
  if (end == std::string_view::npos) return std::nullopt;
  const auto args = parse_object(t.substr(a, end - a));
  if (!args) return std::nullopt;
  call.arguments = json_text(*args);
  calls.push_back(std::move(call));
  used = end;
  return calls;
}

}  // namespace

ParsedToolCalls parse_mistral(std::string_view text) {
  ParsedToolCalls out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t at = text.find(kCalls, pos);
    if (at == std::string_view::npos) break;
    size_t used = 0;
    auto calls = read_block(text.substr(at + kCalls.size()), used);
    if (!calls) {
      out.content += text.substr(pos, at + kCalls.size() - pos);
      pos = at + kCalls.size();
      continue;
    }
    out.content += text.substr(pos, at - pos);
    for (auto& c : *calls) out.calls.push_back(std::move(c));
    pos = at + kCalls.size() + used;
  }
  out.content += text.substr(std::min(pos, text.size()));
  if (!out.calls.empty()) out.content = std::string(trim(out.content));
  return out;
}

size_t mistral_safe_prefix(std::string_view text) { return before_marker(text, kCalls); }

Result<std::string> mistral_grammar(const std::vector<ToolDefinition>& tools, bool parallel,
                                    bool args_form) {
  if (args_form) {
    return calls_grammar(tools, parallel, "", "", "", [&](size_t i, const std::string& args) {
      return gbnf_literal(std::string(kCalls) + tools[i].name) + " (" + gbnf_literal(kCallId) +
             " [a-zA-Z0-9]{9})? " + gbnf_literal(kArgs) + " " + args;
    });
  }
  return calls_grammar(
      tools, parallel, ", ", "[TOOL_CALLS][", "]", [&](size_t i, const std::string& args) {
        return gbnf_literal("{\"name\": \"" + tools[i].name + "\", \"arguments\": ") + " " + args +
               " (" + gbnf_literal(", \"id\": \"") + " [a-zA-Z0-9]{9} " + gbnf_literal("\"") +
               ")? " + gbnf_literal("}");
      });
}

}  // namespace tova::chat
