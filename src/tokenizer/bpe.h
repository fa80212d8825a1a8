// Byte-level BPE tokenizer (tokenizer.ggml.model == "gpt2"): the pre-tokenizer named by
// tokenizer.ggml.pre splits text into words, each word is mapped to the GPT-2 byte alphabet and
// merged pair by pair in tokenizer.ggml.merges order (rank = index). Gemma 4's BPE in
// SentencePiece's spelling shares the merging (make_gemma4_tokenizer).
#pragma once

#include <memory>

#include "core/result.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tova::tok {

// Fails, naming the value, if tokenizer.ggml.pre names a pre-tokenizer we do not implement.
Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(const io::GgufFile& file);

// Gemma 4's tokenizer (tokenizer.ggml.model == "gemma4"; llama.cpp's LLAMA_VOCAB_PRE_TYPE_GEMMA4):
// BPE over raw UTF-8 in SentencePiece's spelling. Spaces become U+2581, the text splits into
// runs of newlines and runs of the rest (a newline run that is a token stays whole), each run is
// merged in tokenizer.ggml.merges order, and a merged piece the vocabulary lacks falls back to
// its bytes' <0xXX> tokens. BOS is always added (as llama.cpp does for these files).
Result<std::unique_ptr<Tokenizer>> make_gemma4_tokenizer(const io::GgufFile& file);

}  // namespace tova::tok
