// Tokenizers built from GGUF metadata (tokenizer.ggml.*): SentencePiece-style ("llama") and
// byte-level BPE ("gpt2") with the pre-tokenizer named by tokenizer.ggml.pre.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"

namespace tova::tok {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Builds the tokenizer the file describes; an unsupported model or pre-tokenizer is an error
  // that names it.
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const io::GgufFile& file);

  // add_special: add BOS (and EOS) as the vocabulary's add_bos/add_eos flags say.
  // parse_special: recognise the text of control tokens (e.g. "<s>") in the input.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special = false) const = 0;
  // The text of a sequence of ids (inverse of Encode for ordinary text; BOS/EOS render empty).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // The bytes one token contributes when it follows `prev` (-1 at the start); used when
  // streaming. May be a partial UTF-8 sequence.
  virtual std::string token_to_piece(int32_t id, int32_t prev) const = 0;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos() const = 0;  // -1 if none
  virtual int32_t eos() const = 0;  // -1 if none
  // End of generation: EOS, EOT and the like.
  virtual bool is_eog(int32_t id) const = 0;
  // The stored text of a token, for reports (e.g. "▁the").
  virtual const std::string& token_text(int32_t id) const = 0;
};

}  // namespace tova::tok
