// OpenAI-style messages as JSON -> ChatMessage: role, content (a string, null, or a list of
// {"type": "text", "text": ...} parts), reasoning_content, name, tool_call_id and tool_calls.
// Any other key is an error naming it (nothing is dropped silently).
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "core/result.h"
#include "tokenizer/chat_template.h"

namespace tova::tok {

Result<std::vector<ChatMessage>> chat_messages_from_json(const nlohmann::ordered_json& messages);

}  // namespace tova::tok
