// A conversation as a chat model reads it: messages rendered with a chat template (the model's
// own tokenizer.chat_template, a family's name such as "chatml", or a .jinja file) into the
// exact prompt it was trained on (Engine::chat_prompt).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tova/result.h"

namespace tova {

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant" | "tool" | what a template accepts
  std::string content;
  // OpenAI's optional fields, given to a Jinja template as they are and left out when empty.
  std::string reasoning_content;  // the thinking of an assistant turn
  std::string name;               // a tool result's function name
  std::string tool_call_id;       // the call a tool result answers
  std::string tool_calls;         // JSON text: [{id, type, function: {name, arguments}}]
  bool null_content = false;      // content is null (an assistant turn of tool calls only)
};

struct ChatOptions {
  // A family's name (chatml, llama3, ...) or a .jinja file; empty: the model's own template
  // (chatml when the model has none).
  std::string chat_template;
  bool add_generation_prompt = true;  // end with the assistant's turn opened
  std::string tools;                  // JSON text: the OpenAI tool list; empty: none
  // Template switches, each a name and a JSON value ("enable_thinking", "false").
  std::vector<std::pair<std::string, std::string>> vars;
};

// The families' template names ChatOptions::chat_template takes ("chatml, llama3, ..."), as a
// front-end's help lists them.
std::string chat_template_names();

// OpenAI-style messages (JSON text: a list of {role, content, ...}; content a string, null or a
// list of text parts) as ChatMessages. Any other key is an error naming it.
Result<std::vector<ChatMessage>> chat_messages_from_json(std::string_view json_text);

// The messages rendered with the template o.chat_template names (a family's name or a .jinja
// file; the model's own template needs the model: Engine::chat_text), without a model.
Result<std::string> render_chat(const std::vector<ChatMessage>& messages, const ChatOptions& o);

}  // namespace tova
