#include "runtime/chat_templates.h"

#include <string>

#include "jinja/json.h"
#include "runtime/engine_access.h"
#include "tokenizer/tokenizer.h"

namespace tova::runtime {

Result<tok::ChatTemplate> chat_template_of(const Engine& engine, std::string_view name) {
  std::string bos;
  std::string eos;
  if (engine.has_tokenizer()) {
    const tok::Tokenizer& tk = EngineAccess::tokenizer(engine);
    if (tk.bos() >= 0) bos = tk.token_text(tk.bos());
    if (tk.eos() >= 0) eos = tk.token_text(tk.eos());
  }
  return tok::ChatTemplate::resolve(name, engine.chat_template_text(), bos, eos);
}

std::vector<std::pair<std::string, jinja::Value>> default_template_vars(const tok::ChatTemplate& t) {
  if (!t.is_jinja()) return {};
  const ReasoningFormat f = reasoning_format_of(t);
  if (f != ReasoningFormat::kThink && f != ReasoningFormat::kGemma4) return {};
  return {{"enable_thinking", jinja::Value(true)}};
}

ReasoningFormat reasoning_format_of(const tok::ChatTemplate& t) {
  if (t.is_jinja()) return reasoning_format_of_template(t.source());
  return t.family() == tok::ChatTemplate::Family::kQwen3 ? ReasoningFormat::kThink
                                                         : ReasoningFormat::kNone;
}

}  // namespace tova::runtime
