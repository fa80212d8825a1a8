// Rendering a chat (role + content messages) into the prompt text a model was trained on.
// A small interface so the chat endpoint does not care which family renders: ChatML is
// implemented here; the tokenizer's chat_template detection replaces make_chat_renderer when it
// lands (src/tokenizer/chat_template.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace tova::server {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

class ChatRenderer {
 public:
  virtual ~ChatRenderer() = default;
  virtual std::string name() const = 0;
  // The prompt text for `messages`, ending where the assistant's answer begins.
  virtual Result<std::string> render(const std::vector<ChatMessage>& messages) const = 0;
};

// `name`: the --chat-template override ("chatml"), or empty to detect from the model's
// tokenizer.chat_template text (empty if the model has none). An unknown name or template is
// an error that says so; the server then answers chat requests with it.
Result<std::unique_ptr<ChatRenderer>> make_chat_renderer(const std::string& name,
                                                         const std::string& model_template);

}  // namespace tova::server
