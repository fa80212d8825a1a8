// Pre-tokenizer splits worked out by hand from each family's regex (leftmost match, ordered
// alternatives, greedy repetition; words between matches are kept).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

namespace tova::tok {
namespace {

using Words = std::vector<std::string>;

// The words as plain UTF-8 (not in the GPT-2 alphabet), to keep expectations readable.
Words words(PreTokenizerKind kind, const std::string& text) {
  const std::vector<uint32_t> cpts = decode_utf8(text);
  Words out;
  size_t begin = 0;
  for (uint32_t len : PreTokenizer(kind).split_lengths(cpts)) {
    std::string w;
    for (size_t i = begin; i < begin + len; ++i) append_utf8(cpts[i], w);
    out.push_back(w);
    begin += len;
  }
  EXPECT_EQ(begin, cpts.size());
  return out;
}

TEST(PreTokenizer, Gpt2) {
  const auto k = PreTokenizerKind::kGpt2;
  EXPECT_EQ(words(k, "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(words(k, "  Hello"), (Words{" ", " Hello"}));
  EXPECT_EQ(words(k, "I've 'RE"), (Words{"I", "'ve", " '", "RE"}));
  EXPECT_EQ(words(k, "3.14"), (Words{"3", ".", "14"}));
  EXPECT_EQ(words(k, "a\n\nb"), (Words{"a", "\n", "\n", "b"}));
  EXPECT_EQ(words(k, "x   "), (Words{"x", "   "}));
  EXPECT_EQ(words(k, "\tx"), (Words{"\t", "x"}));
  EXPECT_EQ(words(k, " !!  ?"), (Words{" !!", " ", " ?"}));
  EXPECT_EQ(words(k, "caf\xC3\xA9 42\xC2\xBD"), (Words{"caf\xC3\xA9", " 42\xC2\xBD"}));
  EXPECT_TRUE(words(k, "").empty());
}

TEST(PreTokenizer, StarcoderSplitsDigits) {
  EXPECT_EQ(words(PreTokenizerKind::kStarcoder, "abc123 45"),
            (Words{"abc", "1", "2", "3", " ", "4", "5"}));
}

TEST(PreTokenizer, FalconPunctuationAndDigitTriples) {
  EXPECT_EQ(words(PreTokenizerKind::kFalcon, "x+=3333;"), (Words{"x", "+=", "333", "3", ";"}));
}

TEST(PreTokenizer, DefaultForFilesWithoutPre) {
  EXPECT_EQ(words(PreTokenizerKind::kDefault, "a, 12345"), (Words{"a", ",", " ", "123", "45"}));
}

TEST(PreTokenizer, Llama3AndQwen2Digits) {
  EXPECT_EQ(words(PreTokenizerKind::kLlama3, "12345 abc\n\n  def"),
            (Words{"123", "45", " abc", "\n\n", " ", " def"}));
  EXPECT_EQ(words(PreTokenizerKind::kLlama3, "I'VE .x"), (Words{"I", "'VE", " .", "x"}));
  EXPECT_EQ(words(PreTokenizerKind::kQwen2, "12345"), (Words{"1", "2", "3", "4", "5"}));
}

// qwen35 (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35): a combining mark (U+0301) continues a
// letters' run ([\p{L}\p{M}]+) and is no longer punctuation ([^\s\p{L}\p{M}\p{N}]); qwen2
// splits it off.
TEST(PreTokenizer, Qwen35MarksJoinLetters) {
  const char* text = "cafe\xCC\x81 x\xCC\x81!";
  EXPECT_EQ(words(PreTokenizerKind::kQwen2, text),
            (Words{"cafe", "\xCC\x81", " x", "\xCC\x81!"}));
  EXPECT_EQ(words(PreTokenizerKind::kQwen35, text), (Words{"cafe\xCC\x81", " x\xCC\x81", "!"}));
  EXPECT_EQ(words(PreTokenizerKind::kQwen35, "12345"), (Words{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(pre_tokenizer_from_name("qwen35"), PreTokenizerKind::kQwen35);
}

// lfm2 files name their pre-tokenizer "lfm2": llama.cpp reads it as llama3's (the same split,
// merges ignored for a word that is a token, BOS added).
TEST(PreTokenizer, Lfm2IsLlama3s) {
  EXPECT_EQ(pre_tokenizer_from_name("lfm2"), PreTokenizerKind::kLlama3);
}

TEST(PreTokenizer, DeepseekLlm) {
  EXPECT_EQ(words(PreTokenizerKind::kDeepseekLlm, "Hello, \xE4\xB8\x96\xE7\x95\x8C  "),
            (Words{"Hello", ",", " ", "\xE4\xB8\x96\xE7\x95\x8C", "  "}));
  // U+3000 is white space, so it is not part of the CJK punctuation range U+3000-U+3002: only
  // the second one joins "。" (as the optional leading \s); the CJK stage (U+0800-U+4E00) then
  // splits "。" off again.
  EXPECT_EQ(words(PreTokenizerKind::kDeepseekLlm, "a\xE3\x80\x80\xE3\x80\x80\xE3\x80\x82"),
            (Words{"a", "\xE3\x80\x80", "\xE3\x80\x80", "\xE3\x80\x82"}));
  // If U+3000 counted, the punctuation stage would keep "\u3000\u3000。" together and a
  // white-space-only remainder would be split as trailing space.
  EXPECT_EQ(words(PreTokenizerKind::kDeepseekLlm, "\xE3\x80\x80\xE3\x80\x80!"),
            (Words{"\xE3\x80\x80", "\xE3\x80\x80!"}));
}

TEST(PreTokenizer, DeepseekCoder) {
  EXPECT_EQ(words(PreTokenizerKind::kDeepseekCoder, "x1 = \xE4\xB8\xAD\xE6\x96\x87"),
            (Words{"x", "1", " =", " ", "\xE4\xB8\xAD\xE6\x96\x87"}));
}

TEST(PreTokenizer, NamesAndByteAlphabet) {
  EXPECT_EQ(pre_tokenizer_from_name("gpt-2"), PreTokenizerKind::kGpt2);
  EXPECT_EQ(pre_tokenizer_from_name("refact"), PreTokenizerKind::kStarcoder);
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe"), PreTokenizerKind::kLlama3);
  EXPECT_FALSE(pre_tokenizer_from_name("bert-bge").has_value());
  // split() maps each word's bytes to the GPT-2 alphabet: ' ' -> 'Ġ', 'é' (C3 A9) -> "Ã©".
  EXPECT_EQ(PreTokenizer(PreTokenizerKind::kGpt2).split("a \xC3\xA9"),
            (Words{"a", "\xC4\xA0\xC3\x83\xC2\xA9"}));
  // Invalid UTF-8 becomes U+FFFD (EF BF BD) before mapping.
  EXPECT_EQ(PreTokenizer(PreTokenizerKind::kGpt2).split("\xFF"),
            (Words{"\xC3\xAF\xC2\xBF\xC2\xBD"}));
}

}  // namespace
}  // namespace tova::tok
