// llama.cpp's tokenizer test cases (shared/vocab/X.gguf.inp and .out, produced with the models'
// own Hugging Face tokenizers): every string must encode to exactly the expected ids, and
// decoding those ids must give the string back.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tokenizer_test_util.h"

namespace tova::tok {
namespace {

using testing::ids_to_string;
using testing::read_file;

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

// The .inp file holds each string followed by "\n__ggml_vocab_test__\n"; the .out file one line
// of space-separated ids per string (no BOS).
std::vector<VocabCase> read_cases(const std::string& gguf_path) {
  const std::string inp = read_file(gguf_path + ".inp");
  const std::string outp = read_file(gguf_path + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::string> lines;
  std::string line;
  for (char c : outp) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) lines.push_back(line);
  EXPECT_EQ(texts.size(), lines.size()) << gguf_path;
  std::vector<VocabCase> cases;
  for (size_t i = 0; i < std::min(texts.size(), lines.size()); ++i) {
    cases.push_back({texts[i], testing::parse_ints(lines[i])});
  }
  return cases;
}

// Vocabularies with test cases that we tokenize; the names of the others must be rejected.
const std::vector<std::string> kSupported = {"llama-spm", "phi-3",          "gpt-2",
                                             "starcoder", "falcon",         "deepseek-coder",
                                             "deepseek-llm", "mpt",         "refact"};
const std::vector<std::string> kUnsupported = {"bert-bge"};

class VocabCasesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabCasesTest, EncodesExactlyAndDecodesBack) {
  TOVA_REQUIRE_SHARED();
  const std::string rel = "vocab/ggml-vocab-" + GetParam() + ".gguf";
  auto loaded = testing::load_shared_tokenizer(rel);
  ASSERT_NE(loaded.tok, nullptr);
  const Tokenizer& tok = *loaded.tok;
  const std::vector<VocabCase> cases = read_cases(::tova::testing::shared_path(rel));
  // llama.cpp's test-tokenizer-0 reads 46 strings per file.
  ASSERT_EQ(cases.size(), 46u);

  int n_exact = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const VocabCase& c = cases[i];
    // test-tokenizer-0 tokenizes with add_special = false and parse_special = false.
    const std::vector<int32_t> got = tok.encode(c.text, false, false);
    EXPECT_EQ(ids_to_string(got), ids_to_string(c.ids)) << "case " << i << ": '" << c.text << "'";
    n_exact += got == c.ids;

    // Byte-level BPE is lossless, and SentencePiece's prefix space is dropped again on decode.
    EXPECT_EQ(tok.decode(c.ids), c.text) << "decode, case " << i;
    std::vector<int32_t> with_special = tok.encode(c.text, true, false);
    EXPECT_EQ(tok.decode(with_special), c.text) << "decode with BOS/EOS, case " << i;

    // Streaming piece by piece gives the same bytes as decoding at once.
    std::string streamed;
    int32_t prev = -1;
    for (int32_t id : c.ids) {
      streamed += tok.token_to_piece(id, prev);
      prev = id;
    }
    EXPECT_EQ(streamed, c.text) << "streamed, case " << i;
  }
  EXPECT_EQ(n_exact, 46) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Vocabs, VocabCasesTest, ::testing::ValuesIn(kSupported),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(VocabCases, UnsupportedVocabIsRejectedByName) {
  TOVA_REQUIRE_SHARED();
  for (const std::string& name : kUnsupported) {
    const std::string path = ::tova::testing::shared_path("vocab/ggml-vocab-" + name + ".gguf");
    auto file = io::GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.message();
    auto tok = Tokenizer::from_gguf(**file);
    ASSERT_FALSE(tok.ok()) << name;
    EXPECT_EQ(tok.message(),
              "unsupported tokenizer 'bert' (tokenizer.ggml.model) in " + path);
  }
}

// A new vocabulary with test cases in shared/ must be added to one of the lists above.
TEST(VocabCases, EveryVocabWithCasesIsListed) {
  TOVA_REQUIRE_SHARED();
  const std::string prefix = "ggml-vocab-";
  const std::string suffix = ".gguf.inp";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(::tova::testing::shared_path("vocab"))) {
    const std::string f = e.path().filename().string();
    if (f.size() <= prefix.size() + suffix.size() || f.rfind(prefix, 0) != 0 ||
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string name = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
    const bool listed =
        std::count(kSupported.begin(), kSupported.end(), name) +
            std::count(kUnsupported.begin(), kUnsupported.end(), name) ==
        1;
    EXPECT_TRUE(listed) << name;
    ++n;
  }
  EXPECT_EQ(n, static_cast<int>(kSupported.size() + kUnsupported.size()));
}

}  // namespace
}  // namespace tova::tok
