// Engine's conversation and token-text calls: the public face over the chat templates
// (tok::ChatTemplate) and the tokenizer's pieces.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "jinja/json.h"
#include "runtime/cache_options.h"
#include "runtime/chat_templates.h"
#include "tokenizer/chat_messages.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tova/engine.h"

namespace tova {
namespace {

Result<nlohmann::ordered_json> parse_json(std::string_view what, const std::string& text) {
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) return make_error("{}: not JSON text", what);
  return j;
}

// The public messages as the OpenAI JSON the library reads (tok::chat_messages_from_json checks
// every field there, once for every front-end).
Result<std::vector<tok::ChatMessage>> to_template_messages(const std::vector<ChatMessage>& ms) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (size_t i = 0; i < ms.size(); ++i) {
    const ChatMessage& m = ms[i];
    nlohmann::ordered_json o = {{"role", m.role}, {"content", m.content}};
    if (m.null_content) o["content"] = nullptr;
    if (!m.reasoning_content.empty()) o["reasoning_content"] = m.reasoning_content;
    if (!m.name.empty()) o["name"] = m.name;
    if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
    if (!m.tool_calls.empty()) {
      TOVA_ASSIGN_OR_RETURN(o["tool_calls"],
                            parse_json(fmt::format("messages[{}].tool_calls", i), m.tool_calls));
    }
    j.push_back(std::move(o));
  }
  return tok::chat_messages_from_json(j);
}

// The template o names; as llama.cpp and tova serve do, a model without a template chats in
// ChatML.
Result<tok::ChatTemplate> chat_template(const Engine& e, const ChatOptions& o) {
  const std::string name =
      o.chat_template.empty() && e.chat_template_text().empty() ? "chatml" : o.chat_template;
  return runtime::chat_template_of(e, name);
}

// The messages rendered with `tmpl`: o's tools and switches, then the template's defaults for
// the switches o does not set (runtime::default_template_vars).
Result<std::string> render(const tok::ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                           const ChatOptions& o) {
  if (messages.empty()) return make_error("messages: a conversation needs at least one message");
  TOVA_ASSIGN_OR_RETURN(const std::vector<tok::ChatMessage> ms, to_template_messages(messages));
  tok::ChatOptions co{.add_generation_prompt = o.add_generation_prompt};
  if (!o.tools.empty()) {
    TOVA_ASSIGN_OR_RETURN(const nlohmann::ordered_json tools, parse_json("tools", o.tools));
    co.tools = jinja::from_json(tools);
  }
  for (const auto& [var, value] : o.vars) {
    TOVA_ASSIGN_OR_RETURN(const nlohmann::ordered_json v, parse_json(var, value));
    co.vars.emplace_back(var, jinja::from_json(v));
  }
  // (A named pair, not a structured binding: clang 14 cannot capture one in the lambda.)
  for (auto& default_var : runtime::default_template_vars(tmpl)) {
    const std::string& name = default_var.first;
    const bool given = std::any_of(o.vars.begin(), o.vars.end(),
                                   [&](const auto& v) { return v.first == name; });
    if (!given) co.vars.emplace_back(name, std::move(default_var.second));
  }
  return tmpl.render(ms, co);
}

}  // namespace

std::string Engine::token_piece(int32_t id, int32_t prev) const {
  if (!has_tokenizer() || id < 0 || id >= n_vocab()) return {};
  if (prev >= n_vocab()) prev = -1;
  return tokenizer().token_to_piece(id, prev);
}

Result<std::string> Engine::chat_text(const std::vector<ChatMessage>& messages,
                                      const ChatOptions& o) const {
  TOVA_ASSIGN_OR_RETURN(const tok::ChatTemplate tmpl, chat_template(*this, o));
  return render(tmpl, messages, o);
}

std::vector<int32_t> Engine::chat_tokens(std::string_view text) const {
  return tok::encode_chat_prompt(tokenizer(), std::string(text));
}

Result<ReasoningFormat> Engine::chat_reasoning(const ChatOptions& o) const {
  TOVA_ASSIGN_OR_RETURN(const tok::ChatTemplate tmpl, chat_template(*this, o));
  return runtime::reasoning_format_of(tmpl);
}

Result<std::vector<int32_t>> Engine::chat_prompt(const std::vector<ChatMessage>& messages,
                                                 const ChatOptions& o) const {
  if (!has_tokenizer()) return make_error("a chat prompt needs the model's tokenizer");
  TOVA_ASSIGN_OR_RETURN(const std::string text, chat_text(messages, o));
  return chat_tokens(text);
}

uint64_t Engine::reserve_bytes(const CacheOptions& o, int64_t n_prompt, int64_t n_ctx) const {
  return runtime::reserve_bytes(*model_, o, n_prompt, n_ctx);
}

}  // namespace tova

namespace tova {

std::string chat_template_names() { return tok::ChatTemplate::names(); }

Result<std::vector<ChatMessage>> chat_messages_from_json(std::string_view json_text) {
  TOVA_ASSIGN_OR_RETURN(const nlohmann::ordered_json j,
                        parse_json("messages", std::string(json_text)));
  TOVA_ASSIGN_OR_RETURN(const std::vector<tok::ChatMessage> ms, tok::chat_messages_from_json(j));
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < ms.size(); ++i) {
    const tok::ChatMessage& m = ms[i];
    ChatMessage c{.role = m.role,
                  .content = m.content,
                  .reasoning_content = m.reasoning_content,
                  .name = m.name,
                  .tool_call_id = m.tool_call_id,
                  .null_content = m.null_content};
    // The calls as the request wrote them (chat_messages_from_json checked them).
    if (j[i].contains("tool_calls")) c.tool_calls = j[i]["tool_calls"].dump();
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::string> render_chat(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  if (o.chat_template.empty()) {
    return make_error("chat template: a family's name or a .jinja file (the model's own needs "
                      "the model: Engine::chat_text)");
  }
  TOVA_ASSIGN_OR_RETURN(const tok::ChatTemplate tmpl, tok::ChatTemplate::resolve(o.chat_template, ""));
  return render(tmpl, messages, o);
}

}  // namespace tova
