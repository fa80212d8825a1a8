// What SentencePiece-style and byte-level BPE tokenizers share: special-token splitting,
// BOS/EOS, decoding token by token, and the vocabulary accessors. A model only says how it
// encodes a run of plain text and how a normal token's text reads.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace tova::tok {

class VocabTokenizer : public Tokenizer {
 public:
  explicit VocabTokenizer(Vocab vocab);
  VocabTokenizer(const VocabTokenizer&) = delete;
  VocabTokenizer& operator=(const VocabTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special = false) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  std::string decode(std::span<const int32_t> ids, const DecodeOptions& options) const override;
  std::string token_to_piece(int32_t id, int32_t prev) const override;

  int32_t n_vocab() const override { return vocab_.n_vocab(); }
  int32_t bos() const override { return vocab_.bos; }
  int32_t eos() const override { return vocab_.eos; }
  bool is_eog(int32_t id) const override;
  const std::string& token_text(int32_t id) const override;

  const Vocab& vocab() const { return vocab_; }

 protected:
  // Appends the tokens of one run of plain text. `after_special` is true at the start of the
  // input and right after a special token (where SentencePiece adds its space prefix).
  virtual void encode_fragment(std::string_view text, bool after_special,
                               std::vector<int32_t>& out) const = 0;
  // The text a normal token stands for ("▁the" -> " the", "Ġthe" -> " the").
  virtual std::string normal_piece(int32_t id) const = 0;
  // Fills the per-token piece cache; derived constructors call it once normal_piece works.
  void build_pieces();

  const Vocab vocab_;

 private:
  std::string piece(int32_t id, int32_t prev, const DecodeOptions& options) const;

  SpecialSplitter special_;
  std::vector<std::string> piece_;  // [n_vocab] text of each token, special ones as stored
};

}  // namespace tova::tok
