// A grammar applied to a vocabulary: which tokens may come next, and the state after one did.
// A token is allowed when its whole text can be read from the current state (it may cross
// several grammar symbols, or end inside a UTF-8 sequence that a later token finishes); a
// token that ends generation is allowed exactly when the text so far is a whole sentence of
// the grammar; tokens with no text (control tokens) never are.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace tova::grammar {

class Constraint {
 public:
  Constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> vocab);

  // at_start: nothing precedes the token but BOS (a SentencePiece piece then loses its space).
  bool allows(int32_t id, bool at_start);
  // allowed[id] = 1 for each token that may come next, 0 otherwise ([n_vocab]); returns how
  // many are allowed. One walk of the trie from the current state.
  int mask(bool at_start, std::vector<char>& allowed);
  // Moves past token `id`; false (nothing changed) if it is not allowed.
  bool accept(int32_t id, bool at_start);
  bool can_end() const { return m_.can_end(); }
  // Empty, or why the matcher refused a step the grammar may allow (Matcher::error()).
  const std::string& error() const { return m_.error(); }
  int32_t bos() const { return vocab_->vocab().bos; }
  int32_t first_eog() const;  // -1: the vocabulary has none

 private:
  std::string_view text(int32_t id, bool at_start) const;
  void walk(uint32_t begin, uint32_t end, const Matcher::State& s, int depth,
            std::vector<char>& allowed, int& n);

  std::shared_ptr<const TokenTrie> vocab_;
  Matcher m_;
  std::vector<Matcher::State> buf_;  // [depth] the walk's states
  bool ended_ = false;               // an end-of-generation token was accepted
};

}  // namespace tova::grammar
