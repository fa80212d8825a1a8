// SentencePiece-style tokenizer (tokenizer.ggml.model == "llama"): spaces become "▁", a space
// is prepended, and adjacent pieces merge by score; characters outside the vocabulary fall back
// to <0xXX> byte tokens, or to the unknown token when the vocabulary has none.
#pragma once

#include <memory>

#include "core/result.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tova::tok {

Result<std::unique_ptr<Tokenizer>> make_spm_tokenizer(const io::GgufFile& file);

}  // namespace tova::tok
