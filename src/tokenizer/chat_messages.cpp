#include "tokenizer/chat_messages.h"

namespace tova::tok {

Result<std::vector<ChatMessage>> chat_messages_from_json(const nlohmann::ordered_json& j) {
  if (!j.is_array()) return make_error("messages: expected a list of messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return make_error("messages[{}]: expected an object with a string 'role'", i);
    }
    ChatMessage c{.role = m["role"].get<std::string>()};
    for (const auto& item : m.items()) {
      // Named copies, not structured bindings: clang 14 cannot capture those in a lambda.
      const std::string& key = item.key();
      const auto& v = item.value();
      auto string_field = [&](std::string& into) -> Status {
        if (!v.is_string()) return make_error("messages[{}].{}: expected a string", i, key);
        into = v.get<std::string>();
        return ok_status();
      };
      if (key == "role") continue;
      if (key == "content") {
        if (v.is_null()) {
          c.null_content = true;
        } else if (v.is_string()) {
          c.content = v.get<std::string>();
        } else if (v.is_array()) {
          for (const auto& part : v) {
            if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
                !part.contains("text") || !part["text"].is_string()) {
              return make_error("messages[{}].content: only {{\"type\": \"text\", \"text\": ...}} "
                                "parts are supported",
                                i);
            }
            c.content += part["text"].get<std::string>();
          }
        } else {
          return make_error("messages[{}].content: expected a string, null or a list of parts", i);
        }
      } else if (key == "reasoning_content") {
        TOVA_RETURN_IF_ERROR(string_field(c.reasoning_content));
      } else if (key == "name") {
        TOVA_RETURN_IF_ERROR(string_field(c.name));
      } else if (key == "tool_call_id") {
        TOVA_RETURN_IF_ERROR(string_field(c.tool_call_id));
      } else if (key == "tool_calls") {
        c.tool_calls = v.dump();
        if (auto calls = tool_calls_value(c, i); !calls.ok()) return calls.error();
      } else {
        return make_error("messages[{}]: '{}' is not supported (role, content, reasoning_content, "
                          "name, tool_call_id, tool_calls)",
                          i, key);
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tova::tok
