// The gemma4 tokenizer (tokenizer.ggml.model "gemma4": BPE over raw UTF-8 in SentencePiece's
// spelling) against llama.cpp 34af94cd's tokenization with a vocabulary of that kind
// (tests/data/tokenizer/gemma4-vocab.gguf and its .inp/.out/.out.special,
// scripts/make_gemma4_tokenizer_goldens.sh): llama.cpp's 46 tokenizer test strings plus
// newline runs, runs of spaces, user-defined markers, bytes without a piece of their own. Every
// string must encode to exactly llama.cpp's ids, plain (add_special = false, parse_special =
// false) and with BOS and special parsing; decoding gives the text back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer_test_util.h"
#include "test_data.h"

namespace tova::tok {
namespace {

std::string g4_tok_path(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/tokenizer/" + file;
}

std::vector<std::string> g4_split(const std::string& all, const std::string& sep) {
  std::vector<std::string> parts;
  for (size_t pos = 0; pos < all.size();) {
    const size_t next = all.find(sep, pos);
    if (next == std::string::npos) {
      parts.push_back(all.substr(pos));
      break;
    }
    parts.push_back(all.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return parts;
}

std::vector<std::string> g4_lines(const std::string& all) {
  std::vector<std::string> lines = g4_split(all, "\n");
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST(Gemma4Tokenizer, EncodesExactlyAsLlamaCpp) {
  auto file = io::GgufFile::open(g4_tok_path("gemma4-vocab.gguf"));
  ASSERT_TRUE(file.ok()) << file.message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.message();
  const std::vector<std::string> texts =
      g4_split(testing::read_file(g4_tok_path("gemma4-vocab.gguf.inp")), "\n__ggml_vocab_test__\n");
  const std::vector<std::string> plain =
      g4_lines(testing::read_file(g4_tok_path("gemma4-vocab.gguf.out")));
  const std::vector<std::string> special =
      g4_lines(testing::read_file(g4_tok_path("gemma4-vocab.gguf.out.special")));
  ASSERT_EQ(texts.size(), 58u);
  ASSERT_EQ(plain.size(), texts.size());
  ASSERT_EQ(special.size(), texts.size());
  int n_exact = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string& t = texts[i];
    const std::vector<int32_t> got = (*tok)->encode(t, false, false);
    EXPECT_EQ(testing::ids_to_string(got), plain[i]) << "case " << i << ": '" << t << "'";
    const std::vector<int32_t> got_special = (*tok)->encode(t, true, true);
    EXPECT_EQ(testing::ids_to_string(got_special), special[i]) << "special, case " << i;
    n_exact += testing::ids_to_string(got) == plain[i] &&
               testing::ids_to_string(got_special) == special[i];
    // Lossless where every byte has a token (the vocabulary keeps stories260K's 256 bytes).
    EXPECT_EQ((*tok)->decode(got), t) << "decode, case " << i;
  }
  EXPECT_EQ(n_exact, 58);
  // BOS is added although the file's add_bos_token could say otherwise (llama.cpp's Gemma 4
  // rule), and a space reads back as a space.
  EXPECT_EQ((*tok)->encode("a b", true).front(), (*tok)->bos());
  EXPECT_EQ((*tok)->decode((*tok)->encode(" a  b ", false)), " a  b ");
}

}  // namespace
}  // namespace tova::tok
