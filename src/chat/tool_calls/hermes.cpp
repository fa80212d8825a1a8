// Hermes-style calls (Qwen 2.5, Qwen 3, Hermes 3): each call a JSON object in its own tags,
//   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// several in a row for parallel calls. Text around them is content.
#include "chat/tool_calls/common.h"

namespace tova::chat {
namespace {
constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
}  // namespace

ParsedToolCalls parse_hermes(std::string_view text) {
  ParsedToolCalls out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string_view::npos) break;
    const size_t body = open + kOpen.size();
    size_t close = text.find(kClose, body);
    // An unclosed last call (the turn ended at the end-of-turn token) still counts when its
    // JSON is whole.
    const size_t body_end = close == std::string_view::npos ? text.size() : close;
    const auto obj = parse_object(trim(text.substr(body, body_end - body)));
    const auto call = obj ? call_from_object(*obj, "arguments") : std::nullopt;
    if (!call) {  // not a call: the text stays content, and the search goes on after the tag
      out.content += text.substr(pos, body - pos);
      pos = body;
      continue;
    }
    out.content += text.substr(pos, open - pos);
    out.calls.push_back(*call);
    pos = close == std::string_view::npos ? text.size() : close + kClose.size();
  }
  out.content += text.substr(std::min(pos, text.size()));
  if (!out.calls.empty()) out.content = std::string(trim(out.content));
  return out;
}

size_t hermes_safe_prefix(std::string_view text) { return before_marker(text, kOpen); }

Result<std::string> hermes_grammar(const std::vector<ToolDefinition>& tools, bool parallel) {
  return calls_grammar(tools, parallel, "\n", "", "", [&](size_t i, const std::string& args) {
    return gbnf_literal("<tool_call>\n{\"name\": \"" + tools[i].name + "\", \"arguments\": ") +
           " " + args + " " + gbnf_literal("}\n</tool_call>");
  });
}

}  // namespace tova::chat
