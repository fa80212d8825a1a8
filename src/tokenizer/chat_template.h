// Chat templates: a conversation -> the exact prompt string a chat model was trained on. GGUF
// files carry the template as Jinja text (tokenizer.chat_template); tova does not run Jinja but
// recognises the common families by their text and renders each one in C++, to the same string
// the published template gives. An unrecognised template is an error, never a guess.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tova::tok {

class Tokenizer;

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  enum class Family {
    kChatML,   // <|im_start|>role\n...<|im_end|>\n
    kQwen25,   // ChatML, with Qwen2.5's default system message
    kQwen3,    // ChatML, with Qwen3's <think> handling of assistant turns
    kLlama2,   // <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s>
    kLlama3,   // <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
    kLlama31,  // Llama-3 with 3.1/3.2's system header (knowledge cutoff and date)
    kMistral,  // <s>[INST] ... [/INST]...</s>
    kGemma,    // <start_of_turn>user\n...<end_of_turn>\n (assistant -> model), no system
    kGemma3,   // Gemma, the system message prefixed to the first user turn
    kPhi3,     // <|user|>\n...<|end|>\n
    kZephyr,   // <|user|>\n...</s>\n
  };

  // Recognises the family from a GGUF's tokenizer.chat_template text.
  static Result<ChatTemplate> detect(std::string_view template_text);
  // By name (--chat-template): one of names().
  static Result<ChatTemplate> by_name(std::string_view name);
  // What a front-end uses: the template named by `name` (an override such as --chat-template)
  // if it is not empty, else the one recognised from the model's tokenizer.chat_template text
  // (`model_template`, empty when the model has none). Each error says what to do about it.
  static Result<ChatTemplate> resolve(std::string_view name, std::string_view model_template);
  // "chatml, qwen2.5, qwen3, llama2, llama3, llama3.1, mistral, gemma, gemma3, phi3, zephyr"
  static std::string names();

  Family family() const { return family_; }
  std::string_view name() const;

  // The prompt string, special tokens as text (BOS included where the template writes it: the
  // caller tokenizes with special-token parsing and adds no BOS of its own). An error for what
  // the family's template rejects (a role it does not know, a system message where it has no
  // system role, user/assistant not alternating where it requires so).
  Result<std::string> render(const std::vector<ChatMessage>& messages,
                             bool add_generation_prompt) const;
  // A conversation to answer: render(messages, true), and an error for no messages.
  Result<std::string> render_prompt(const std::vector<ChatMessage>& messages) const;

 private:
  explicit ChatTemplate(Family f) : family_(f) {}
  Result<std::string> render_family(const std::vector<ChatMessage>& messages,
                                    bool add_generation_prompt) const;
  Family family_;
};

// The token ids of a rendered chat, special tokens parsed; BOS is added unless the template
// already wrote it (Llama-2, Mistral, Gemma write it themselves: a second one changes the answer).
std::vector<int32_t> encode_chat_prompt(const Tokenizer& tk, std::string_view text);

}  // namespace tova::tok
