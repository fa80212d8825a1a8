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

struct DecodeOptions {
  // Control and unknown tokens render their stored text (e.g. "<s>") instead of nothing.
  bool render_special = false;
  // SentencePiece vocabularies prefix the text with a space when encoding; decoding drops it
  // from the first piece. With this set it is also dropped right after a leading BOS, which
  // makes decode(encode(text, add_special=true)) == text. llama.cpp's detokenizer keeps that
  // space (its output reads "<s> Once upon a time"): set false to reproduce it.
  bool strip_space_after_bos = true;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Builds the tokenizer the file describes; an unsupported model or pre-tokenizer is an error
  // that names it.
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const io::GgufFile& file);

  // add_special: add BOS (and EOS) as the vocabulary's add_bos/add_eos flags say.
  // parse_special: recognise the text of control tokens (e.g. "<s>") in the input.
  // User-defined tokens (token_type 4) are recognised either way, as llama.cpp does.
  // A byte-level BPE vocabulary that has no token for some byte (falcon lacks 28 control
  // bytes, gpt-neox 13) cannot encode it: such a byte gives no id, exactly as llama.cpp's
  // tokenizer does, so token ids stay identical to llama.cpp's for the same model and text
  // (docs/RELIABILITY.md, finding 1).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special = false) const = 0;
  // The text of a sequence of ids (inverse of Encode for ordinary text; BOS/EOS render empty).
  // Equals the concatenation of token_to_piece(ids[i], ids[i - 1]).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  virtual std::string decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
    (void)options;
    return decode(ids);
  }
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
