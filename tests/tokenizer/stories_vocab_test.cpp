// stories260K's 512-token SentencePiece vocabulary, shared by every model in shared/models:
// the golden token files must be exactly what our tokenizer produces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer_test_util.h"

namespace tova::tok {
namespace {

using testing::ids_to_string;
using testing::load_shared_tokenizer;
using testing::parse_ints;
using testing::read_file;
using ::tova::testing::shared_path;

TEST(StoriesVocab, OnceUponATime) {
  TOVA_REQUIRE_SHARED();
  auto loaded = load_shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(loaded.tok, nullptr);
  const Tokenizer& tok = *loaded.tok;
  EXPECT_EQ(tok.n_vocab(), 512);
  EXPECT_EQ(tok.bos(), 1);
  EXPECT_EQ(tok.eos(), 2);
  EXPECT_TRUE(tok.is_eog(2));
  EXPECT_FALSE(tok.is_eog(1));
  // Each word is a whole token of this vocabulary, so the merges must end there.
  const std::vector<int32_t> ids = tok.encode("Once upon a time", true);
  EXPECT_EQ(ids_to_string(ids), "1 403 407 261 378");
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(tok.token_text(403), "\xE2\x96\x81Once");
  EXPECT_EQ(tok.token_text(407), "\xE2\x96\x81upon");
  EXPECT_EQ(tok.token_text(261), "\xE2\x96\x81" "a");
  EXPECT_EQ(tok.token_text(378), "\xE2\x96\x81time");
  EXPECT_EQ(tok.decode(ids), "Once upon a time");
  // Without add_special there is no BOS, and the prefix space is still added.
  EXPECT_EQ(ids_to_string(tok.encode("Once upon a time", false)), "403 407 261 378");
}

// tokens-128.json and tokens-1024.json are the first 128 / 1024 ids of tokens-source.txt
// tokenized by llama.cpp with BOS.
TEST(StoriesVocab, GoldenTokenFiles) {
  TOVA_REQUIRE_SHARED();
  auto loaded = load_shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(loaded.tok, nullptr);
  const std::string source = read_file(shared_path("golden/tokens-source.txt"));
  const std::vector<int32_t> ids = loaded.tok->encode(source, true);
  for (int n : {128, 1024}) {
    const std::vector<int32_t> golden =
        parse_ints(read_file(shared_path("golden/tokens-" + std::to_string(n) + ".json")));
    ASSERT_EQ(golden.size(), static_cast<size_t>(n));
    ASSERT_GE(ids.size(), golden.size());
    EXPECT_EQ(ids_to_string(std::vector<int32_t>(ids.begin(), ids.begin() + n)),
              ids_to_string(golden))
        << "tokens-" << n << ".json";
  }
  EXPECT_EQ(loaded.tok->decode(ids), source);
}

// llama.cpp printed its greedy run as "<s> Once upon a time, ...": BOS rendered, and the space
// SentencePiece put before "Once" kept. DecodeOptions reproduce that form.
TEST(StoriesVocab, LlamaCppRenderingOfGreedyGolden) {
  TOVA_REQUIRE_SHARED();
  auto loaded = load_shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(loaded.tok, nullptr);
  const Tokenizer& tok = *loaded.tok;
  const std::string golden = read_file(shared_path("golden/greedy-stories260K-200.txt"));
  const std::string prefix = "<s> ";
  ASSERT_EQ(golden.rfind(prefix, 0), 0u);
  const std::string text = golden.substr(prefix.size());
  const std::vector<int32_t> ids = tok.encode(text, true);
  ASSERT_GE(ids.size(), 5u);
  EXPECT_EQ(ids_to_string(std::vector<int32_t>(ids.begin(), ids.begin() + 5)),
            "1 403 407 261 378");
  EXPECT_EQ(tok.decode(ids, {.render_special = true, .strip_space_after_bos = false}), golden);
  EXPECT_EQ(tok.decode(ids), text);
}

// Every model in shared/models carries the same vocabulary and must tokenize identically.
TEST(StoriesVocab, AllModelsShareTheVocabulary) {
  TOVA_REQUIRE_SHARED();
  auto ref = load_shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(ref.tok, nullptr);
  const std::string source = read_file(shared_path("golden/tokens-source.txt"));
  const std::vector<int32_t> want = ref.tok->encode(source, true);
  for (const char* name :
       {"booklm-3m", "rand-llama-gqa-f32", "rand-llama-gqa-f16", "rand-llama-gqa-bf16",
        "rand-llama-gqa-q8_0", "rand-llama-gqa-q4_0", "rand-qwen2-f32", "rand-qwen2-f16",
        "rand-qwen2-bf16", "rand-qwen2-q8_0", "rand-qwen2-q4_0"}) {
    auto loaded = load_shared_tokenizer(std::string("models/") + name + ".gguf");
    ASSERT_NE(loaded.tok, nullptr) << name;
    EXPECT_EQ(loaded.tok->n_vocab(), 512) << name;
    EXPECT_EQ(loaded.tok->encode(source, true), want) << name;
  }
}

}  // namespace
}  // namespace tova::tok
