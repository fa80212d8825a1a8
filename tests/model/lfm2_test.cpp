// The lfm2 family (gated short convolutions + attention) on its fixture (tests/data/arch):
// the layer plan its head_count_kv pattern makes, the conv state each sequence keeps, and bad
// files each one error naming the key or tensor at fault. What every hybrid shares (prompt at
// once equals token by token, policies bound only the attention layers, clone, followers and
// session files carry the recurrent states) runs for lfm2 in qwen35_test.cpp's Hybrid suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/model_test_util.h"
#include "model/weights.h"

namespace tova::testing {
namespace {

std::string lfm2_fixture() { return std::string(TOVA_TEST_DATA_DIR) + "/arch/lfm2-f32.gguf"; }

TEST(Lfm2, ThePatternMakesConvolutionLayersAroundTwoAttentionLayers) {
  auto m = model::Model::load(lfm2_fixture());
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layer, 6);
  EXPECT_EQ(c.shortconv_l_cache, 3);
  EXPECT_EQ(c.n_head_kv, 2);
  int ir = 0, ia = 0;
  for (int il = 0; il < 6; ++il) {
    SCOPED_TRACE(il);
    const bool attends = il == 2 || il == 5;
    const model::LayerPlan& lp = (*m)->plan()[il];
    EXPECT_EQ(c.recurrent(il), !attends);
    EXPECT_EQ(lp.mixer, attends ? model::MixerKind::kAttention : model::MixerKind::kShortConv);
    EXPECT_EQ(lp.holds, attends ? model::MixerState::kKv : model::MixerState::kRecurrent);
    EXPECT_EQ(lp.state, attends ? ia++ : ir++);
    EXPECT_EQ(lp.owner, il);
  }
  auto st = runtime::make_state(**m, cache_options("full", 0), 0);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ((*st)->n_layer(), 2);  // K/V: the attention layers
  ASSERT_EQ((*st)->n_recurrent(), 4);
  // Per convolution layer: the last l_cache - 1 = 2 inputs of 64 channels, no delta matrix.
  EXPECT_EQ((*st)->recurrent(0).shape(), (kv::RecurrentShape{.conv_channels = 64, .conv_taps = 2}));
  EXPECT_EQ((*st)->recurrent_bytes(), 4u * 64 * 2 * 4);
}

// The fixture rewritten: without some tensors, with a key set to a number or an array, or with
// a tensor renamed.
struct Rewrite {
  std::vector<std::string> drop;
  std::string key;
  std::vector<int32_t> value;  // one element: a u32, else an i32 array
  std::string rename_from, rename_to;
};

std::string load_error(const Rewrite& r) {
  auto f = io::GgufFile::open(lfm2_fixture(), io::GgufFile::Load::kRead);
  if (!f.ok()) return "open: " + f.message();
  io::GgufWriter out;
  for (const auto& [k, v] : (*f)->metadata()) out.set(k, v);
  if (!r.key.empty()) {
    out.set(r.key, r.value.size() == 1 ? io::GgufValue::make_u32(r.value[0])
                                       : io::GgufValue::make_i32_array(r.value));
  }
  for (const auto& t : (*f)->tensors()) {
    if (std::find(r.drop.begin(), r.drop.end(), t.name) != r.drop.end()) continue;
    const std::string name = t.name == r.rename_from ? r.rename_to : t.name;
    out.add_tensor(name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  auto g = io::GgufFile::from_bytes(out.to_bytes(), "l.gguf");
  if (!g.ok()) return "gguf: " + g.message();
  auto m = model::Model::from_file(std::move(g).value());
  return m.ok() ? "" : m.message();
}

void expect_one_line(const std::string& e, const std::string& what) {
  EXPECT_NE(e.find(what), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(Lfm2, BadFilesAreOneErrorNamingWhatIsWrong) {
  EXPECT_EQ(load_error({}), "");
  // A conv kernel of 0, of 1 (no state to keep) and absurd.
  expect_one_line(load_error({.key = "lfm2.shortconv.l_cache", .value = {0}}),
                  "lfm2.shortconv.l_cache 0 is out of range");
  expect_one_line(load_error({.key = "lfm2.shortconv.l_cache", .value = {1}}),
                  "lfm2.shortconv.l_cache 1 is out of range");
  expect_one_line(load_error({.key = "lfm2.shortconv.l_cache", .value = {100000}}),
                  "lfm2.shortconv.l_cache 100000 is out of range");
  // A kernel size that disagrees with the tensors.
  expect_one_line(load_error({.key = "lfm2.shortconv.l_cache", .value = {4}}),
                  "blk.0.shortconv.conv.weight");
  // The pattern names a convolution layer where the file has attention tensors, and the other
  // way round.
  expect_one_line(load_error({.key = "lfm2.attention.head_count_kv", .value = {0, 0, 0, 0, 0, 2}}),
                  "makes layer 2 a short-convolution layer, but it has no "
                  "'blk.2.shortconv.in_proj.weight' (it has 'blk.2.attn_q.weight')");
  expect_one_line(load_error({.key = "lfm2.attention.head_count_kv", .value = {2, 0, 2, 0, 0, 2}}),
                  "makes layer 0 an attention layer, but it has no 'blk.0.attn_q.weight' (it has "
                  "'blk.0.shortconv.in_proj.weight')");
  expect_one_line(load_error({.key = "lfm2.attention.head_count_kv", .value = {0, 0, 0, 0, 0, 0}}),
                  "lfm2.attention.head_count_kv leaves no attention layer");
  expect_one_line(load_error({.key = "lfm2.attention.head_count_kv", .value = {0, 0, 2, 0, 0, 1}}),
                  "attention layers of different KV head counts are not implemented");
  // Tensors missing, or one the family does not use (the final norm under llama's name).
  for (const char* t : {"blk.0.shortconv.conv.weight", "blk.1.shortconv.out_proj.weight",
                        "blk.2.attn_k_norm.weight", "token_embd_norm.weight"}) {
    expect_one_line(load_error({.drop = {t}}), t);
  }
  expect_one_line(load_error({.rename_from = "token_embd_norm.weight",
                              .rename_to = "output_norm.weight"}),
                  "token_embd_norm.weight");
  // Keys llama.cpp reads for LFM2 variants tova does not run.
  expect_one_line(load_error({.key = "lfm2.attention.sliding_window", .value = {16}}),
                  "lfm2.attention.sliding_window 16");
  expect_one_line(load_error({.key = "lfm2.attention.causal", .value = {0}}),
                  "lfm2.attention.causal");
}

// lfm2moe: lfm2's layers, the first two feed-forwards dense and the rest 8 experts chosen by
// sigmoid + a selection bias; a file that leaves out what llama.cpp requires, or asks for
// weights it does not compute, is one error.
TEST(Lfm2Moe, LeadingDenseLayersThenSigmoidRoutedExperts) {
  auto m = model::Model::load(std::string(TOVA_TEST_DATA_DIR) + "/arch/lfm2moe-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_layer_dense_lead, 2);
  EXPECT_EQ(c.moe_gating, model::MoeGating::kSigmoid);
  EXPECT_TRUE(c.expert_weights_norm);
  for (int il = 0; il < c.n_layer; ++il) {
    const model::LayerWeights& l = (*m)->weights().layers[il];
    EXPECT_EQ(l.ffn_kind, il < 2 ? model::FfnKind::kDense : model::FfnKind::kMoe) << il;
    EXPECT_EQ(l.moe.select_bias.size(), il < 2 ? 0u : 8u) << il;
    EXPECT_EQ((*m)->plan()[il].mixer,
              il == 2 || il == 5 ? model::MixerKind::kAttention : model::MixerKind::kShortConv);
  }
}

std::string lfm2moe_error(const std::string& drop_key, const std::string& key = "",
                          uint32_t value = 0, const std::string& drop_tensor = "") {
  auto f = io::GgufFile::open(std::string(TOVA_TEST_DATA_DIR) + "/arch/lfm2moe-f32.gguf",
                              io::GgufFile::Load::kRead);
  if (!f.ok()) return "open: " + f.message();
  io::GgufWriter out;
  for (const auto& [k, v] : (*f)->metadata()) {
    if (k != drop_key) out.set(k, v);
  }
  if (!key.empty()) out.set(key, io::GgufValue::make_u32(value));
  for (const auto& t : (*f)->tensors()) {
    if (t.name == drop_tensor) continue;
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  auto g = io::GgufFile::from_bytes(out.to_bytes(), "m.gguf");
  if (!g.ok()) return "gguf: " + g.message();
  auto m = model::Model::from_file(std::move(g).value());
  return m.ok() ? "" : m.message();
}

TEST(Lfm2Moe, BadFilesAreOneErrorNamingWhatIsWrong) {
  EXPECT_EQ(lfm2moe_error(""), "");
  expect_one_line(lfm2moe_error("lfm2moe.expert_gating_func"),
                  "missing key 'lfm2moe.expert_gating_func'");
  expect_one_line(lfm2moe_error("", "lfm2moe.expert_gating_func", 3),
                  "lfm2moe.expert_gating_func 3 is not implemented");
  expect_one_line(lfm2moe_error("", "lfm2moe.leading_dense_block_count", 7),
                  "lfm2moe.leading_dense_block_count 7 is more than the 6 layers");
  expect_one_line(lfm2moe_error("", "", 0, "blk.3.exp_probs_b.bias"), "blk.3.exp_probs_b.bias");
  // One dense layer fewer: layer 1's dense tensors are unused, its experts missing.
  expect_one_line(lfm2moe_error("", "lfm2moe.leading_dense_block_count", 1),
                  "blk.1.ffn_gate_inp.weight");
}

}  // namespace
}  // namespace tova::testing
