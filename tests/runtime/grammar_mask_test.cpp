// The grammar mask on real vocabularies (byte-level BPE: GPT-2, DeepSeek; SentencePiece with
// byte tokens: llama): the tokenizer's own encoding of a valid JSON text is accepted token by
// token (tokens crossing several grammar symbols, SentencePiece's leading space at the start),
// and at every step the trie walk's mask equals checking each token on its own.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "grammar/constraint.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "io/gguf.h"
#include "runtime/grammar_vocab.h"
#include "test_data.h"
#include "tova/grammar.h"

namespace tova::runtime {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_vocab(const std::string& rel, const std::string& gbnf, const std::string& text) {
  auto file = io::GgufFile::open(::tova::testing::shared_path(rel));
  ASSERT_TRUE(file.ok()) << file.message();
  auto tk = tok::Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tk.ok()) << tk.message();
  auto trie = std::make_shared<const grammar::TokenTrie>(grammar_vocab_text(**tk));
  auto g = grammar::parse_gbnf(gbnf);
  ASSERT_TRUE(g.ok()) << g.message();
  grammar::Constraint c(std::make_shared<const grammar::Grammar>(std::move(*g)), trie);
  const std::vector<int32_t> ids = (*tk)->encode(text, /*add_special=*/false);
  ASSERT_EQ((*tk)->decode(ids), text) << rel;
  std::vector<char> mask;
  double mask_ms = 0;
  int n_masks = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    const bool at_start = i == 0;
    const auto t0 = std::chrono::steady_clock::now();
    const int n = c.mask(at_start, mask);
    mask_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++n_masks;
    int brute = 0;
    for (int32_t id = 0; id < trie->n_vocab(); ++id) {
      const bool ok = c.allows(id, at_start);
      brute += ok;
      ASSERT_EQ(ok, mask[id] != 0) << rel << " step " << i << " token " << id << " '"
                                   << trie->vocab().text[id] << "'";
    }
    ASSERT_EQ(n, brute);
    if (i == ids.size()) {
      EXPECT_TRUE(c.can_end()) << rel;
      break;
    }
    ASSERT_NE(mask[ids[i]], 0) << rel << " step " << i << ": the text's own token '"
                               << trie->vocab().text[ids[i]] << "' is refused";
    ASSERT_TRUE(c.accept(ids[i], at_start));
  }
  // For the record (not a limit): the mean full-mask time at this vocabulary.
  std::printf("%s: %d tokens, %zu steps, mean mask %.3f ms\n", rel.c_str(), trie->n_vocab(),
              ids.size() + 1, mask_ms / n_masks);
}

// In the schema's declared order (the grammar writes properties in that order).
const char* kText = R"({"name": "Zoë", "age": 42, "score": -1.25, "tags": ["red", "blue"], "when": "2024-02-28", "id": "AB-123"})";

TEST(GrammarMask, RealVocabulariesAgreeWithOneByOne) {
  TOVA_REQUIRE_SHARED();
  const std::string schema = read_all(std::string(TOVA_TEST_DATA_DIR) + "/grammar/person.schema.json");
  auto gbnf = json_schema_grammar(schema);
  ASSERT_TRUE(gbnf.ok()) << gbnf.message();
  for (const char* v : {"vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-llama-spm.gguf",
                        "vocab/ggml-vocab-deepseek-llm.gguf"}) {
    check_vocab(v, *gbnf, kText);
    if (std::string(v).find("deepseek") != std::string::npos) continue;  // (time)
    // Any JSON object, and free text with multi-byte characters.
    check_vocab(v, json_object_grammar(), kText);
    check_vocab(v, "root ::= [^\\x00-\\x1F]* \"!\"", "Grüße, 世界 — ok!");
  }
}

}  // namespace
}  // namespace tova::runtime
