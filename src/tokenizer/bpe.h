// Byte-level BPE tokenizer (tokenizer.ggml.model == "gpt2"): the pre-tokenizer named by
// tokenizer.ggml.pre splits text into words, each word is mapped to the GPT-2 byte alphabet and
// merged pair by pair in tokenizer.ggml.merges order (rank = index).
#pragma once

#include <memory>

#include "core/result.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tova::tok {

// Fails, naming the value, if tokenizer.ggml.pre names a pre-tokenizer we do not implement.
Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(const io::GgufFile& file);

}  // namespace tova::tok
