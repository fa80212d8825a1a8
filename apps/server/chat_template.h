// Rendering a chat (role + content messages) into the prompt text a model was trained on.
// A small interface so the chat endpoint does not care which family renders; the families and
// their detection from the GGUF's tokenizer.chat_template live in src/tokenizer/chat_template.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tokenizer/tokenizer.h"

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

// `name`: the --chat-template override (tokenizer::ChatTemplate::names()), or empty to detect from
// the model's tokenizer.chat_template text (empty if the model has none). An unknown name or
// template is an error that says so; the server then answers chat requests with it.
Result<std::unique_ptr<ChatRenderer>> make_chat_renderer(const std::string& name,
                                                         const std::string& model_template);

// The token ids of a rendered chat, special tokens parsed; BOS is added unless the template
// already wrote it.
std::vector<int32_t> encode_chat_prompt(const tok::Tokenizer& tk, std::string_view text);

}  // namespace tova::server
