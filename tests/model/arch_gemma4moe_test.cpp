// Gemma 4's MoE variant (tests/data/arch/gemma4moe-f32.gguf: the dense fixture's six layers,
// each with four experts of 32, two chosen, beside its dense feed-forward; gate and up of the
// experts fused): what the loader reads, the experts' gate and up stored apart giving the same
// bits as fused, and files that disagree with themselves refused in one line. Logits and greedy
// tokens against llama.cpp: arch_golden_test.cpp.
#include <gtest/gtest.h>

#include <cstring>

#include "io/gguf.h"
#include "model_test_util.h"

namespace tova::testing {
namespace {

std::string g4m_path() { return std::string(TOVA_TEST_DATA_DIR) + "/arch/gemma4moe-f32.gguf"; }

// The MoE fixture rewritten: `key` set to `value` (or dropped where value is null), tensor
// `drop` left out, and with split = true every layer's ffn_gate_up_exps written as
// ffn_gate_exps and ffn_up_exps (each expert's first n_ff_exp rows are its gate).
struct G4mEdit {
  std::string key;
  const io::GgufValue* value = nullptr;
  bool drop_key = false;
  std::string drop;
  bool split = false;
  bool split_keep_fused = false;
};

std::unique_ptr<io::GgufFile> g4m_edited(const G4mEdit& e) {
  auto f = io::GgufFile::open(g4m_path());
  EXPECT_TRUE(f.ok()) << f.message();
  io::GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata()) {
    if (k == e.key && e.drop_key) continue;
    w.set(k, v);
  }
  if (e.value != nullptr) w.set(e.key, *e.value);
  for (const io::GgufTensorInfo& t : (*f)->tensors()) {
    if (t.name == e.drop) continue;
    const std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    const std::string fused = "ffn_gate_up_exps.weight";
    if (!e.split || !t.name.ends_with(fused)) {
      w.add_tensor(t.name, t.type, t.dims, bytes);
      continue;
    }
    // dims {n_embd, 2 f, n_expert}: per expert 2 f rows, the gate's first.
    const int64_t f2 = t.dims[1], n_exp = t.dims[2];
    const size_t row = t.n_bytes / static_cast<size_t>(f2 * n_exp);
    const size_t half = row * static_cast<size_t>(f2 / 2);
    std::vector<uint8_t> gate, up;
    for (int64_t x = 0; x < n_exp; ++x) {
      const uint8_t* b = t.data + static_cast<size_t>(x) * 2 * half;
      gate.insert(gate.end(), b, b + half);
      up.insert(up.end(), b + half, b + 2 * half);
    }
    const std::string p = t.name.substr(0, t.name.size() - fused.size());
    w.add_tensor(p + "ffn_gate_exps.weight", t.type, {t.dims[0], f2 / 2, n_exp}, gate);
    w.add_tensor(p + "ffn_up_exps.weight", t.type, {t.dims[0], f2 / 2, n_exp}, up);
    if (e.split_keep_fused) w.add_tensor(t.name, t.type, t.dims, bytes);
  }
  auto g = io::GgufFile::from_bytes(w.to_bytes(), "gemma4moe-edited.gguf");
  EXPECT_TRUE(g.ok()) << g.message();
  return std::move(g).value();
}

std::string g4m_load_error(const G4mEdit& e) {
  auto m = model::Model::from_file(g4m_edited(e));
  return m.ok() ? "" : m.message();
}

TEST(ArchGemma4Moe, EveryLayerKeepsItsDenseFeedForwardBesideTheExperts) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(g4m_path());
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_expert, 4);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_exp, 32);
  EXPECT_TRUE(c.moe_beside_dense);
  EXPECT_TRUE(c.expert_weights_norm);
  for (const model::LayerWeights& l : (*m)->weights().layers) {
    EXPECT_EQ(l.ffn_kind, model::FfnKind::kMoe);
    EXPECT_EQ(l.w_gate.n_out, c.n_ff);  // the dense feed-forward
    EXPECT_EQ(l.moe.gate.size(), 4u);
    EXPECT_EQ(l.moe.gate[0].n_out, 32);
    EXPECT_EQ(l.moe.down_scale.size(), 4u);
    EXPECT_EQ(l.moe.router_in_scale.size(), static_cast<size_t>(c.n_embd));
  }
}

// llama.cpp reads the experts' gate and up fused or apart: both give the same bits.
TEST(ArchGemma4Moe, GateAndUpApartEqualFused) {
  TOVA_REQUIRE_SHARED();
  auto fused = model::Model::load(g4m_path());
  ASSERT_TRUE(fused.ok()) << fused.message();
  auto apart = model::Model::from_file(g4m_edited({.split = true}));
  ASSERT_TRUE(apart.ok()) << apart.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(24);
  ThreadPool pool(2);
  const auto a = all_logits(**fused, ids, cache_options("full", 0), 8, pool);
  const auto b = all_logits(**apart, ids, cache_options("full", 0), 8, pool);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST(ArchGemma4Moe, FilesThatDisagreeWithGemma4sMixtureAreRefused) {
  TOVA_REQUIRE_SHARED();
  const io::GgufValue no = io::GgufValue::make_bool(false);
  std::string e = g4m_load_error({.key = "gemma4.expert_weights_norm", .value = &no});
  EXPECT_NE(e.find("gemma4.expert_weights_norm false"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  const io::GgufValue half = io::GgufValue::make_f32(0.5f);
  e = g4m_load_error({.key = "gemma4.expert_weights_scale", .value = &half});
  EXPECT_NE(e.find("gemma4.expert_weights_scale 0.5"), std::string::npos) << e;
  e = g4m_load_error({.key = "gemma4.expert_feed_forward_length", .drop_key = true});
  EXPECT_NE(e.find("gemma4.expert_feed_forward_length is missing"), std::string::npos) << e;
  e = g4m_load_error({.drop = "blk.2.ffn_down_exps.weight"});
  EXPECT_NE(e.find("blk.2.ffn_down_exps.weight"), std::string::npos) << e;
  e = g4m_load_error({.drop = "blk.1.ffn_gate_inp.scale"});
  EXPECT_NE(e.find("blk.1.ffn_gate_inp.scale"), std::string::npos) << e;
  e = g4m_load_error({.drop = "blk.0.post_ffw_norm_2.weight"});
  EXPECT_NE(e.find("blk.0.post_ffw_norm_2.weight"), std::string::npos) << e;
  e = g4m_load_error({.split = true, .split_keep_fused = true});
  EXPECT_NE(e.find("the experts' gate and up twice"), std::string::npos) << e;
  // A file without experts but with a router: the router is not used.
  auto m = model::Model::from_file([&] {
    auto f = io::GgufFile::open(g4m_path());
    io::GgufWriter w;
    for (const auto& [k, v] : (*f)->metadata()) {
      if (k != "gemma4.expert_count" && k != "gemma4.expert_used_count" &&
          k != "gemma4.expert_feed_forward_length") {
        w.set(k, v);
      }
    }
    for (const io::GgufTensorInfo& t : (*f)->tensors()) {
      w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
    return std::move(io::GgufFile::from_bytes(w.to_bytes(), "g4m-dense.gguf")).value();
  }());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("ffn_gate_inp"), std::string::npos) << m.message();
}

}  // namespace
}  // namespace tova::testing
