#include "chat_template.h"

namespace tova::server {

namespace {

// <|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n
class ChatMl final : public ChatRenderer {
 public:
  std::string name() const override { return "chatml"; }
  Result<std::string> render(const std::vector<ChatMessage>& messages) const override {
    if (messages.empty()) return make_error("messages is empty");
    std::string out;
    for (const auto& m : messages) {
      if (m.role != "system" && m.role != "user" && m.role != "assistant") {
        return make_error("unsupported message role '{}' (valid: system, user, assistant)", m.role);
      }
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    }
    out += "<|im_start|>assistant\n";
    return out;
  }
};

}  // namespace

Result<std::unique_ptr<ChatRenderer>> make_chat_renderer(const std::string& name,
                                                         const std::string& model_template) {
  if (name == "chatml") return std::unique_ptr<ChatRenderer>(new ChatMl());
  if (!name.empty()) {
    return make_error("unknown chat template '{}' (valid: chatml)", name);
  }
  if (model_template.find("<|im_start|>") != std::string::npos) {
    return std::unique_ptr<ChatRenderer>(new ChatMl());
  }
  if (model_template.empty()) {
    return make_error(
        "the model has no chat template (tokenizer.chat_template); start the server with "
        "--chat-template chatml to chat with it");
  }
  return make_error(
      "the model's chat template is not one tova recognises; start the server with "
      "--chat-template NAME (valid: chatml)");
}

}  // namespace tova::server
