#include "chat_template.h"

#include "tokenizer/chat_template.h"

namespace tova::server {

namespace {

// A template family of src/tokenizer/chat_template, rendered with the assistant's turn opened.
class FamilyRenderer final : public ChatRenderer {
 public:
  explicit FamilyRenderer(tokenizer::ChatTemplate t) : t_(t) {}
  std::string name() const override { return std::string(t_.name()); }
  Result<std::string> render(const std::vector<ChatMessage>& messages) const override {
    if (messages.empty()) return make_error("messages is empty");
    std::vector<tokenizer::ChatMessage> ms;
    ms.reserve(messages.size());
    for (const ChatMessage& m : messages) ms.push_back({m.role, m.content});
    return t_.render(ms, /*add_generation_prompt=*/true);
  }

 private:
  tokenizer::ChatTemplate t_;
};

}  // namespace

Result<std::unique_ptr<ChatRenderer>> make_chat_renderer(const std::string& name,
                                                         const std::string& model_template) {
  if (!name.empty()) {
    auto t = tokenizer::ChatTemplate::by_name(name);
    if (!t.ok()) {
      return make_error("unknown chat template '{}' (valid: {})", name,
                        tokenizer::ChatTemplate::names());
    }
    return std::unique_ptr<ChatRenderer>(new FamilyRenderer(*t));
  }
  if (model_template.empty()) {
    return make_error(
        "the model has no chat template (tokenizer.chat_template); give --chat-template NAME "
        "to chat with it (valid: {})",
        tokenizer::ChatTemplate::names());
  }
  auto t = tokenizer::ChatTemplate::detect(model_template);
  if (!t.ok()) {
    return make_error(
        "the model's chat template is not one tova recognises ({}); give --chat-template NAME "
        "(valid: {})",
        t.message(), tokenizer::ChatTemplate::names());
  }
  return std::unique_ptr<ChatRenderer>(new FamilyRenderer(*t));
}

std::vector<int32_t> encode_chat_prompt(const tok::Tokenizer& tk, std::string_view text) {
  // Templates that write BOS themselves (Llama-2, Mistral, Gemma) must not get a second one.
  const int32_t bos = tk.bos();
  const bool has_bos = bos >= 0 && !tk.token_text(bos).empty() &&
                       text.substr(0, tk.token_text(bos).size()) == tk.token_text(bos);
  return tk.encode(text, /*add_special=*/!has_bos, /*parse_special=*/true);
}

}  // namespace tova::server
