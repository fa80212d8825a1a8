// decode(encode(text)) == text wherever the tokenizer can preserve it, and what is correct where
// it cannot by design. Also the vocabularies in shared/vocab that have no reference ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "tokenizer_test_util.h"

namespace tova::tok {
namespace {

using testing::ids_to_string;
using testing::load_shared_tokenizer;

const std::vector<std::string> kTexts = {
    "",
    "Hello world",
    "  leading and trailing spaces  ",
    "tabs\tand\nnew\r\nlines\n\n\n",
    "Caf\xC3\xA9 na\xC3\xAFve \xC2\xBD \xE2\x82\xAC 3.14159 1234567",
    "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8" "apple\xE5\xB7\xA5\xE4\xBD\x9C",
    "\xF0\x9F\xA6\x99\xF0\x9F\x9A\x80 \xE2\x9C\x85 emoji",
    "\xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE \xD0\xBD\xD0\xB0 \xE1\x9E\x80\xE1\x9E\xB6",
    "def f(x):\n    return x ** 2  # comment\n",
};

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, DecodeInvertsEncode) {
  TOVA_REQUIRE_SHARED();
  auto loaded = load_shared_tokenizer(GetParam());
  ASSERT_NE(loaded.tok, nullptr);
  for (const std::string& text : kTexts) {
    for (bool add_special : {false, true}) {
      const std::vector<int32_t> ids = loaded.tok->encode(text, add_special);
      EXPECT_EQ(loaded.tok->decode(ids), text) << ids_to_string(ids);
    }
  }
}

// baichuan (SentencePiece) and gpt-neox (BPE without tokenizer.ggml.pre: the default split)
// have no reference ids; the llama-spm and gpt-2 cases run here too for the extra texts.
INSTANTIATE_TEST_SUITE_P(Vocabs, RoundTripTest,
                         ::testing::Values("vocab/ggml-vocab-baichuan.gguf",
                                           "vocab/ggml-vocab-gpt-neox.gguf",
                                           "vocab/ggml-vocab-llama-spm.gguf",
                                           "vocab/ggml-vocab-gpt-2.gguf",
                                           "vocab/ggml-vocab-deepseek-llm.gguf",
                                           "models/stories260K.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(n.rfind('/') + 1);
                           n = n.substr(0, n.find(".gguf"));
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// Where exact round trip is impossible by design.
TEST(RoundTrip, KnownLossyCases) {
  TOVA_REQUIRE_SHARED();
  auto spm = load_shared_tokenizer("vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(spm.tok, nullptr);
  // SentencePiece writes spaces as U+2581 "▁", so a literal "▁" in the input is the same token
  // as a space and decodes as one.
  EXPECT_EQ(spm.tok->decode(spm.tok->encode("a\xE2\x96\x81" "b", false)), "a b");
  // A prefix space is added after every special token, so it shows in the decoded text.
  const std::vector<int32_t> ids = spm.tok->encode("a</s>b", false, true);
  EXPECT_EQ(ids_to_string(ids), ids_to_string({263, 2, 289}));  // ▁a </s> ▁b
  EXPECT_EQ(spm.tok->decode(ids, {.render_special = true}), "a</s> b");

  auto bpe = load_shared_tokenizer("vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(bpe.tok, nullptr);
  // Invalid UTF-8 is replaced by U+FFFD before the byte mapping (as llama.cpp does).
  EXPECT_EQ(bpe.tok->decode(bpe.tok->encode("a\xFF" "b", false)), "a\xEF\xBF\xBD" "b");
}

// Phi-3 lists "</s>" as user-defined, but it ends generation, so it is treated as control:
// not split out of plain text, and rendered empty.
TEST(RoundTrip, Phi3SpecialTokens) {
  TOVA_REQUIRE_SHARED();
  auto phi = load_shared_tokenizer("vocab/ggml-vocab-phi-3.gguf");
  ASSERT_NE(phi.tok, nullptr);
  const Tokenizer& t = *phi.tok;
  EXPECT_EQ(t.eos(), 32000);
  for (int32_t id : {2, 32000, 32007}) EXPECT_TRUE(t.is_eog(id)) << id;
  EXPECT_FALSE(t.is_eog(32001));
  const std::vector<int32_t> plain = t.encode("x</s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0) << ids_to_string(plain);
  EXPECT_EQ(t.decode(plain), "x</s>");
  const std::vector<int32_t> parsed = t.encode("x</s>", false, true);
  EXPECT_EQ(parsed.back(), 2) << ids_to_string(parsed);
  EXPECT_EQ(t.decode(parsed), "x");
}

}  // namespace
}  // namespace tova::tok
