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
  return parse_tagged_calls(text, kOpen, kClose, [](std::string_view body) {
    const auto obj = parse_object(trim(body));
    return obj ? call_from_object(*obj, "arguments") : std::nullopt;
  });
}

size_t hermes_safe_prefix(std::string_view text) { return before_marker(text, kOpen); }

Result<std::string> hermes_grammar(const std::vector<ToolDefinition>& tools, bool parallel) {
  return calls_grammar(tools, parallel, "\n", "", "", [&](size_t i, const std::string& args) {
    return gbnf_literal("<tool_call>\n{\"name\": \"" + tools[i].name + "\", \"arguments\": ") +
           " " + args + " " + gbnf_literal("}\n</tool_call>");
  });
}

}  // namespace tova::chat
