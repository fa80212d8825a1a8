// Engine's conversation and token-text calls: the public face over the chat templates
// (tok::ChatTemplate) and the tokenizer's pieces.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "jinja/json.h"
#include "core/kv_type.h"
#include "model/model.h"
#include "runtime/cache_options.h"
#include "runtime/speculation.h"
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

// The template o names; as llama.cpp and tova serve do, a model without a template chats in
// ChatML.
Result<ChatTemplate> template_of(const Engine& e, const ChatOptions& o) {
  const std::string name =
      o.chat_template.empty() && e.chat_template_text().empty() ? "chatml" : o.chat_template;
  return e.chat_template(name);
}

// The messages rendered with `tmpl`: o's tools and switches, then the template's defaults for
// the switches o does not set (runtime::default_template_vars).
Result<std::string> render(const tok::ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                           const ChatOptions& o) {
  if (messages.empty()) return make_error("messages: a conversation needs at least one message");
  // Every message's calls are checked, also where a hand-written family does not read them.
  for (size_t i = 0; i < messages.size(); ++i) {
    if (auto calls = tok::tool_calls_value(messages[i], i); !calls.ok()) return calls.error();
  }
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
  return tmpl.render(messages, co);
}

}  // namespace

struct ChatTemplate::Impl {
  tok::ChatTemplate tmpl;
};

ChatTemplate::ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(const ChatTemplate&) = default;
ChatTemplate& ChatTemplate::operator=(const ChatTemplate&) = default;

std::string_view ChatTemplate::name() const { return impl_->tmpl.name(); }
bool ChatTemplate::is_jinja() const { return impl_->tmpl.is_jinja(); }
ReasoningFormat ChatTemplate::reasoning_format() const {
  return runtime::reasoning_format_of(impl_->tmpl);
}
ToolCallFormat ChatTemplate::tool_call_format() const {
  return is_jinja() ? detect_tool_call_format(impl_->tmpl.source()) : ToolCallFormat::kNone;
}
Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         const ChatOptions& o) const {
  return ::tova::render(impl_->tmpl, messages, o);
}

Result<ChatTemplate> Engine::chat_template(std::string_view name) const {
  TOVA_ASSIGN_OR_RETURN(tok::ChatTemplate t, runtime::chat_template_of(*this, name));
  return ChatTemplate(std::make_shared<const ChatTemplate::Impl>(ChatTemplate::Impl{std::move(t)}));
}

Status Engine::check_kv_format(const KvFormat& f) const {
  TOVA_RETURN_IF_ERROR(check_kv_rotation(f));
  return ::tova::check_kv_format(f, model_->config().head_dim);
}

std::string Engine::token_piece(int32_t id, int32_t prev) const {
  if (!has_tokenizer() || id < 0 || id >= n_vocab()) return {};
  if (prev >= n_vocab()) prev = -1;
  return tokenizer().token_to_piece(id, prev);
}

Result<std::string> Engine::chat_text(const std::vector<ChatMessage>& messages,
                                      const ChatOptions& o) const {
  TOVA_ASSIGN_OR_RETURN(const ChatTemplate tmpl, template_of(*this, o));
  return tmpl.render(messages, o);
}

std::vector<int32_t> Engine::chat_tokens(std::string_view text) const {
  return tok::encode_chat_prompt(tokenizer(), std::string(text));
}

Result<ReasoningFormat> Engine::chat_reasoning(const ChatOptions& o) const {
  TOVA_ASSIGN_OR_RETURN(const ChatTemplate tmpl, template_of(*this, o));
  return tmpl.reasoning_format();
}

Result<std::vector<int32_t>> Engine::chat_prompt(const std::vector<ChatMessage>& messages,
                                                 const ChatOptions& o) const {
  if (!has_tokenizer()) return make_error("a chat prompt needs the model's tokenizer");
  TOVA_ASSIGN_OR_RETURN(const std::string text, chat_text(messages, o));
  return chat_tokens(text);
}

uint64_t Engine::reserve_bytes(const CacheOptions& o, int64_t n_prompt, int64_t n_ctx,
                               const SpeculativeOptions& spec) const {
  return runtime::reserve_bytes(*model_, o, n_prompt, n_ctx, max_image_tokens()) +
         runtime::draft_reserve_bytes(*this, spec, o, n_prompt, n_ctx);
}

}  // namespace tova

namespace tova {

std::string chat_template_names() { return tok::ChatTemplate::names(); }

Result<std::vector<ChatMessage>> chat_messages_from_json(std::string_view json_text) {
  TOVA_ASSIGN_OR_RETURN(const nlohmann::ordered_json j,
                        parse_json("messages", std::string(json_text)));
  return tok::chat_messages_from_json(j);
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
