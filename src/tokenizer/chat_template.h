// Chat templates: a conversation -> the exact prompt string a chat model was trained on. GGUF
// files carry the template as Jinja text (tokenizer.chat_template): it is rendered with the Jinja
// renderer (src/jinja/) as Hugging Face renders it, with bos_token, eos_token, messages,
// add_generation_prompt, tools and the template's own switches (enable_thinking, ...). The
// hand-written families below remain for `--chat-template NAME` and for files without a
// template; `--chat-template FILE.jinja` renders that file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "jinja/value.h"
#include "tova/chat.h"

namespace tova::jinja {
class Template;
}

namespace tova::tok {

class Tokenizer;

// The messages are the public ChatMessage (tova/chat.h): role and content, and OpenAI's optional
// fields, given to a Jinja template as they are and left out when empty (the hand-written
// families read role and content only); tool_calls, JSON text, reach the template as the list
// it spells (tool_calls_value checks it).

// A message's tool_calls as a template reads them: undefined when empty, else the list the
// JSON text spells, each call {"function": {"name": ...}, ...}; an error names message i.
Result<jinja::Value> tool_calls_value(const ChatMessage& m, size_t i);

// What a Jinja template gets besides the messages.
struct ChatOptions {
  bool add_generation_prompt = true;
  jinja::Value tools;  // the OpenAI tool list; undefined: no tools
  // Template switches such as enable_thinking=false or reasoning_effort="high".
  std::vector<std::pair<std::string, jinja::Value>> vars;
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
    kJinja,    // a Jinja template: the model's own or a file's
  };

  // A Jinja template (the model's tokenizer.chat_template or a file's text); `bos_token` and
  // `eos_token` are the tokenizer's texts, `label` what name() reports ("model", a path).
  static Result<ChatTemplate> from_jinja(std::string_view source, std::string bos_token,
                                         std::string eos_token, std::string label);

  // Recognises the family from a GGUF's tokenizer.chat_template text.
  static Result<ChatTemplate> detect(std::string_view template_text);
  // By name (--chat-template): one of names().
  static Result<ChatTemplate> by_name(std::string_view name);
  // What a front-end uses: `name` (an override such as --chat-template) if it is not empty: a
  // path to a Jinja file (it names an existing file, or ends in .jinja) or one of names();
  // else the model's tokenizer.chat_template text (`model_template`, empty when the model has
  // none) rendered as Jinja. `bos_token`/`eos_token`: the tokenizer's texts, for Jinja. Each
  // error says what to do about it.
  static Result<ChatTemplate> resolve(std::string_view name, std::string_view model_template,
                                      std::string_view bos_token = {},
                                      std::string_view eos_token = {});
  // "chatml, qwen2.5, qwen3, llama2, llama3, llama3.1, mistral, gemma, gemma3, phi3, zephyr"
  static std::string names();

  Family family() const { return family_; }
  // The family's name; for Jinja, "model" (the model's own) or the file's path.
  std::string_view name() const;
  // What resolve() takes to give this template again: "" for the model's own.
  std::string spec() const;
  bool is_jinja() const { return family_ == Family::kJinja; }
  // The Jinja text (empty for a hand-written family): what the reasoning and tool-call formats
  // are read from.
  const std::string& source() const { return source_; }

  // The prompt string, special tokens as text (BOS included where the template writes it: the
  // caller tokenizes with special-token parsing and adds no BOS of its own). An error for what
  // the family's template rejects (a role it does not know, a system message where it has no
  // system role, user/assistant not alternating where it requires so).
  Result<std::string> render(const std::vector<ChatMessage>& messages,
                             bool add_generation_prompt) const;
  // With tools and template switches (a hand-written family refuses tools, and ignores no
  // switch silently: it refuses those too).
  Result<std::string> render(const std::vector<ChatMessage>& messages,
                             const ChatOptions& options) const;
  // A conversation to answer: render(messages, true), and an error for no messages.
  Result<std::string> render_prompt(const std::vector<ChatMessage>& messages) const;

 private:
  explicit ChatTemplate(Family f) : family_(f) {}
  // The Jinja variables a render gets (messages, bos_token, add_generation_prompt, tools, ...).
  Result<jinja::Value> context(const std::vector<ChatMessage>& messages,
                               const ChatOptions& options) const;
  Result<std::string> render_family(const std::vector<ChatMessage>& messages,
                                    bool add_generation_prompt) const;
  Family family_;
  // Jinja only.
  std::shared_ptr<const jinja::Template> jinja_;
  std::string bos_token_;
  std::string eos_token_;
  std::string label_;
  std::string source_;
};

// The token ids of a rendered chat, special tokens parsed; BOS is added unless the template
// already wrote it (Llama-2, Mistral, Gemma write it themselves: a second one changes the answer).
std::vector<int32_t> encode_chat_prompt(const Tokenizer& tk, std::string_view text);

}  // namespace tova::tok
