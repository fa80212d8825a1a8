#include "runtime/chat_templates.h"

#include <string>

#include "tokenizer/tokenizer.h"

namespace tova::runtime {

Result<tok::ChatTemplate> chat_template_of(const Engine& engine, std::string_view name) {
  std::string bos;
  std::string eos;
  if (engine.has_tokenizer()) {
    const tok::Tokenizer& tk = engine.tokenizer();
    if (tk.bos() >= 0) bos = tk.token_text(tk.bos());
    if (tk.eos() >= 0) eos = tk.token_text(tk.eos());
  }
  return tok::ChatTemplate::resolve(name, engine.chat_template_text(), bos, eos);
}

}  // namespace tova::runtime
