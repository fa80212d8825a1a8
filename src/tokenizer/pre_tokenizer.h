// Byte-level BPE pre-tokenizers: the regex splits named by tokenizer.ggml.pre, written as
// hand-made matchers over code points (no std::regex), then mapped to the GPT-2 byte alphabet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tova::tok {

enum class PreTokenizerKind {
  kGpt2,           // gpt-2, mpt, olmo, phi-2, ...: GPT-2's regex
  kStarcoder,      // starcoder, refact, smollm, ...: single digits, then GPT-2's regex
  kFalcon,         // punctuation runs, GPT-2's regex, then 3-digit groups
  kDeepseekCoder,  // deepseek-coder
  kDeepseekLlm,    // deepseek-llm
  kLlama3,         // llama3 / llama-bpe: digits in groups of up to 3
  kQwen2,          // qwen2: llama3's regex with single digits
  kQwen35,         // qwen35: qwen2's with marks (\p{M}) joining letters' runs, not punctuation's
  kGpt4o,          // gpt-4o (o200k: gpt-oss): case-split letter runs, digits in groups of 3
  kDefault,        // no or "default" tokenizer.ggml.pre (e.g. gpt-neox)
};

// The pre-tokenizer a tokenizer.ggml.pre value names, or nullopt if we do not implement it.
std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view name);

class PreTokenizer {
 public:
  explicit PreTokenizer(PreTokenizerKind kind) : kind_(kind) {}
  PreTokenizerKind kind() const { return kind_; }

  // Splits text into words, each already in the GPT-2 byte alphabet. Invalid UTF-8 bytes become
  // U+FFFD first (as llama.cpp does), so any input is accepted.
  std::vector<std::string> split(std::string_view text) const;

  // The word boundaries alone: lengths in code points of consecutive words of `cpts`.
  std::vector<uint32_t> split_lengths(const std::vector<uint32_t>& cpts) const;

 private:
  PreTokenizerKind kind_;
};

}  // namespace tova::tok
