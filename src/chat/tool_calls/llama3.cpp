// Llama 3.1/3.2 calls (their templates' JSON tool calling): the whole assistant message is
//   {"name": "get_weather", "parameters": {"city": "Paris"}}
// optionally after <|python_tag|>; several calls are separated by ';' (3.1's built-in style).
// Anything else in the message makes it plain content: the format has no markers to find a call
// inside text.
#include "chat/tool_calls/common.h"

namespace tova::chat {
namespace {
constexpr std::string_view kPythonTag = "<|python_tag|>";
}  // namespace

ParsedToolCalls parse_llama3(std::string_view text) {
  ParsedToolCalls out;
  std::string_view rest = trim(text);
  if (rest.starts_with(kPythonTag)) rest = trim(rest.substr(kPythonTag.size()));
  std::vector<ToolCall> calls;
  while (!rest.empty()) {
    const size_t end = json_end(rest, 0);
    if (end == std::string_view::npos) break;
    const auto obj = parse_object(rest.substr(0, end));
    // Both keys occur: the templates write "parameters"; models also write "arguments".
    auto call =
        obj ? call_from_object(*obj, obj->contains("parameters") ? "parameters" : "arguments")
            : std::nullopt;
    if (!call) break;
    calls.push_back(*call);
    rest = trim(rest.substr(end));
    if (rest.starts_with(';')) rest = trim(rest.substr(1));
  }
  if (rest.empty() && !calls.empty()) {
    out.calls = std::move(calls);
  } else {
    out.content = std::string(text);
  }
  return out;
}

size_t llama3_safe_prefix(std::string_view text) {
  const size_t b = text.find_first_not_of(" \t\n\r");
  if (b == std::string_view::npos) return 0;  // only whitespace so far: a call may follow
  const std::string_view t = text.substr(b);
  const bool may_call = t.starts_with('{') || t.starts_with(kPythonTag) ||
                        kPythonTag.starts_with(t.substr(0, std::min(t.size(), kPythonTag.size())));
  return may_call ? 0 : text.size();
}

Result<std::string> llama3_grammar(const std::vector<ToolDefinition>& tools) {
  // One call: the templates refuse a turn of several ("only supports single tool-calls").
  return calls_grammar(tools, false, "", "", "", [&](size_t i, const std::string& args) {
    return gbnf_literal("{\"name\": \"" + tools[i].name + "\", \"parameters\": ") + " " + args +
           " " + gbnf_literal("}");
  });
}

}  // namespace tova::chat
