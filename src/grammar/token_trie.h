// A vocabulary as the grammar sees it: each token's text as it appears in the output (the
// tokenizer's pieces: SentencePiece's ▁ already a space and <0xNN> already the byte, byte-level
// BPE's Ġ already a space), which tokens end generation, and a byte trie of the texts so a
// grammar state can be tried against every token in one walk that drops a whole subtree at the
// first byte the grammar refuses. Built once per model and shared by every session.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tova::grammar {

struct VocabText {
  std::vector<std::string> text;  // [n_vocab] the piece after an ordinary token ("" for control)
  std::vector<char> eog;          // [n_vocab] 1: ends generation
  // SentencePiece with add_space_prefix: a piece at the start of the text (nothing before it,
  // or just BOS) loses its leading space.
  bool strip_space_at_start = false;
  int32_t bos = -1;
};

class TokenTrie {
 public:
  explicit TokenTrie(VocabText v);

  // Preorder: a node's children follow it; its subtree ends at `end`.
  struct Node {
    uint32_t end;        // one past the last node of the subtree
    uint32_t tok_begin;  // tokens whose text ends here: ids_[tok_begin, tok_end)
    uint32_t tok_end;
    uint8_t byte;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const int32_t* ids(const Node& n) const { return ids_.data() + n.tok_begin; }
  const VocabText& vocab() const { return v_; }
  int n_vocab() const { return static_cast<int>(v_.text.size()); }
  int max_depth() const { return max_depth_; }

 private:
  void build(const std::vector<int32_t>& sorted, size_t lo, size_t hi, size_t depth);

  VocabText v_;
  std::vector<Node> nodes_;
  std::vector<int32_t> ids_;
  int max_depth_ = 0;
};

}  // namespace tova::grammar
