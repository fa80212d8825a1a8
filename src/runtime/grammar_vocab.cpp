#include "runtime/grammar_vocab.h"

namespace tova::runtime {

grammar::VocabText grammar_vocab_text(const tok::Tokenizer& tk) {
  grammar::VocabText v;
  const int32_t n = tk.n_vocab();
  v.text.resize(n);
  v.eog.resize(n);
  v.bos = tk.bos();
  // The piece after an ordinary token: after any id that is not BOS (the only token after
  // which a piece reads differently, as at the very start).
  const int32_t after = v.bos == 0 ? 1 : 0;
  for (int32_t id = 0; id < n; ++id) {
    v.text[id] = tk.token_to_piece(id, after);
    v.eog[id] = tk.is_eog(id) ? 1 : 0;
    if (!v.strip_space_at_start && tk.token_to_piece(id, -1) != v.text[id]) {
      v.strip_space_at_start = true;
    }
  }
  return v;
}

}  // namespace tova::runtime
