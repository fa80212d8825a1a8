// A tokenizer's vocabulary as grammars see it (grammar::VocabText): each token's piece after an
// ordinary token, which tokens end generation, and whether a piece at the start of the text
// loses a leading space (SentencePiece). Engine::grammar_vocab() builds its trie from this once.
#pragma once

#include "grammar/token_trie.h"
#include "tokenizer/tokenizer.h"

namespace tova::runtime {

grammar::VocabText grammar_vocab_text(const tok::Tokenizer& tk);

}  // namespace tova::runtime
