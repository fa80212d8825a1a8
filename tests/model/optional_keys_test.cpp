// Keys llama.cpp reads as optional are optional here too where the arithmetic does not need
// them, and refused by name where it does: feed_forward_length in a model whose every
// feed-forward is a mixture of experts (qwen35moe: experts plus a shared expert, each with its
// own width key) is not needed; in a dense model it is.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "io/gguf.h"
#include "model_test_util.h"

namespace tova::testing {
namespace {

std::string ok_fixture(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + file;
}

// The fixture `file` written again without the metadata keys in `drop`.
Result<std::unique_ptr<model::Model>> load_without(const std::string& file,
                                                   const std::set<std::string>& drop) {
  auto f = io::GgufFile::open(ok_fixture(file));
  EXPECT_TRUE(f.ok()) << f.message();
  io::GgufWriter w;
  size_t dropped = 0;
  for (const auto& [k, v] : (*f)->metadata()) {
    if (drop.count(k)) {
      ++dropped;
      continue;
    }
    w.set(k, v);
  }
  EXPECT_EQ(dropped, drop.size()) << "the fixture " << file << " lacks a key this test drops";
  for (const io::GgufTensorInfo& t : (*f)->tensors()) {
    w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  auto g = io::GgufFile::from_bytes(w.to_bytes(), file + " (keys dropped)");
  EXPECT_TRUE(g.ok()) << g.message();
  return model::Model::from_file(std::move(g).value());
}

TEST(OptionalKeys, AllExpertModelWithoutFeedForwardLengthLoadsAndComputesTheSame) {
  auto with = model::Model::load(ok_fixture("qwen35moe-f32.gguf"));
  ASSERT_TRUE(with.ok()) << with.message();
  auto without = load_without("qwen35moe-f32.gguf", {"qwen35moe.feed_forward_length"});
  ASSERT_TRUE(without.ok()) << without.message();
  EXPECT_EQ((*without)->config().n_ff_exp, (*with)->config().n_ff_exp);
  EXPECT_EQ((*without)->config().n_ff_shexp, (*with)->config().n_ff_shexp);
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back((i * 37 + 5) % (*with)->config().n_vocab);
  ThreadPool pool(2);
  const auto a = all_logits(**with, ids, cache_options("full", 0), 4, pool);
  const auto b = all_logits(**without, ids, cache_options("full", 0), 4, pool);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST(OptionalKeys, DenseModelWithoutFeedForwardLengthIsRefusedByName) {
  auto m = load_without("llama3-f32.gguf", {"llama.feed_forward_length"});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("llama.feed_forward_length is absent or 0, but layer 0 has a dense "
                             "feed-forward"),
            std::string::npos)
      << m.message();
  EXPECT_EQ(m.message().find('\n'), std::string::npos) << m.message();
}

// A shared expert whose width has neither its own key nor feed_forward_length to default to.
TEST(OptionalKeys, SharedExpertWithoutAnyWidthIsRefusedByName) {
  auto m = load_without("qwen35moe-f32.gguf", {"qwen35moe.feed_forward_length",
                                               "qwen35moe.expert_shared_feed_forward_length"});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("qwen35moe.expert_shared_feed_forward_length is absent"),
            std::string::npos)
      << m.message();
  EXPECT_NE(m.message().find("ffn_gate_inp_shexp.weight"), std::string::npos) << m.message();
}

// Experts whose width defaults to feed_forward_length / expert_used_count.
TEST(OptionalKeys, ExpertWidthWithoutAnyKeyIsRefusedByName) {
  auto m = load_without("qwen35moe-f32.gguf", {"qwen35moe.feed_forward_length",
                                               "qwen35moe.expert_feed_forward_length"});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("qwen35moe.expert_feed_forward_length is absent"), std::string::npos)
      << m.message();
}

}  // namespace
}  // namespace tova::testing
