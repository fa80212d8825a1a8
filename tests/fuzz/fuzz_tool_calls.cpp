// Harness: the tool-call parsers (src/chat/tool_calls/) on arbitrary model output, in every
// format. A parse never crashes nor throws; every call it finds has a name and arguments that
// are a JSON object, and its name, id and arguments are UTF-8 whatever bytes the text holds
// (issue 49: regressions/tool_calls/); text without a call is returned whole as content; the
// safe prefix of a stream is never beyond the text.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tova/tool_calls.h"
#include "tova/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tova::ToolCallFormat;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<tova::ToolDefinition> tools = {
      {.name = "f",
       .parameters = R"({"type": "object", "properties": {"s": {"type": "string"}}})"}};
  for (ToolCallFormat f : tova::tool_call_formats()) {
    const tova::ParsedToolCalls p = tova::parse_tool_calls(f, text, tools);
    for (const tova::ToolCall& c : p.calls) {
      if (c.name.empty()) __builtin_trap();
      if (!tova::is_valid_utf8(c.name) || !tova::is_valid_utf8(c.id) ||
          !tova::is_valid_utf8(c.arguments)) {
        __builtin_trap();
      }
      const auto j = nlohmann::json::parse(c.arguments, nullptr, false);
      if (j.is_discarded() || !j.is_object()) __builtin_trap();
    }
    if (p.calls.empty() && p.content != text) __builtin_trap();
    if (tova::tool_call_safe_prefix(f, text) > text.size()) __builtin_trap();
  }
  return 0;
}
