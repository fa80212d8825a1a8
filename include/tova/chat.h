// A conversation as a chat model reads it: messages rendered with a chat template (the model's
// own tokenizer.chat_template, a family's name such as "chatml", or a .jinja file) into the
// exact prompt it was trained on (Engine::chat_prompt).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tova/reasoning.h"
#include "tova/result.h"
#include "tova/tool_calls.h"

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

// A chat template resolved once (Engine::chat_template), for a front-end that renders many
// conversations with it (a server: every chat request). Copies share the parsed template.
class ChatTemplate {
 public:
  struct Impl;  // the library's template (tokenizer/chat_template.h)
  explicit ChatTemplate(std::shared_ptr<const Impl> impl);
  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&);
  ChatTemplate& operator=(const ChatTemplate&);

  // The family's name ("chatml"); a Jinja template's label: "model" (the model's own) or the
  // file's path.
  std::string_view name() const;
  // A Jinja template (the model's own or a file's), not a hand-written family: only these
  // render tools, tool turns and template switches.
  bool is_jinja() const;
  // How its answers carry reasoning (think blocks, harmony channels).
  ReasoningFormat reasoning_format() const;
  // How its answers write tool calls (kNone for a hand-written family).
  ToolCallFormat tool_call_format() const;
  // The messages rendered as Engine::chat_text renders them (o's tools and switches, then the
  // template's defaults for the switches o does not set); o.chat_template is not read.
  Result<std::string> render(const std::vector<ChatMessage>& messages, const ChatOptions& o) const;

 private:
  std::shared_ptr<const Impl> impl_;
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
