// The granitehybrid family (Mamba2 + attention, Granite's multipliers) on its fixture
// (tests/data/arch): the layer plan its head_count_kv pattern makes, the Mamba2 state each
// sequence keeps, the multipliers read, and bad files each one error naming the key or tensor at
// fault. What every hybrid shares (prompt at once equals token by token, policies bound only the
// attention layers, clone, followers and session files carry the recurrent states) runs for
// granitehybrid in qwen35_test.cpp's Hybrid suite.
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

std::string granite_fixture() {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/granitehybrid-f32.gguf";
}

TEST(GraniteHybrid, ThePatternMakesMamba2LayersAroundTwoAttentionLayers) {
  auto m = model::Model::load(granite_fixture());
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layer, 6);
  EXPECT_EQ(c.mamba2.conv_kernel, 4);
  EXPECT_EQ(c.mamba2.d_inner, 128);
  EXPECT_EQ(c.mamba2.d_state, 16);
  EXPECT_EQ(c.mamba2.n_head, 4);
  EXPECT_EQ(c.mamba2.n_group, 2);
  // The multipliers, and no RoPE anywhere (rope.scaling.finetuned false).
  EXPECT_EQ(c.embd_scale, 2.f);
  EXPECT_EQ(c.residual_scale, 0.5f);
  EXPECT_EQ(c.attn_scale, 0.125f);
  EXPECT_EQ(c.logit_scale, 6.f);
  ASSERT_EQ(c.layer_nope.size(), 6u);
  for (uint8_t nope : c.layer_nope) EXPECT_EQ(nope, 1);
  int ir = 0, ia = 0;
  for (int il = 0; il < 6; ++il) {
    SCOPED_TRACE(il);
    const bool attends = il == 2 || il == 5;
    const model::LayerPlan& lp = (*m)->plan()[il];
    EXPECT_EQ(c.recurrent(il), !attends);
    EXPECT_EQ(lp.mixer, attends ? model::MixerKind::kAttention : model::MixerKind::kMamba2);
    EXPECT_EQ(lp.holds, attends ? model::MixerState::kKv : model::MixerState::kRecurrent);
    EXPECT_EQ(lp.state, attends ? ia++ : ir++);
  }
  auto st = runtime::make_state(**m, cache_options("full", 0), 0);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ((*st)->n_layer(), 2);  // K/V: the attention layers
  ASSERT_EQ((*st)->n_recurrent(), 4);
  // Per Mamba2 layer: the conv's last 3 inputs of x|B|C (128 + 2 x 2 x 16 channels) and a
  // 32 x 16 state per head of 4.
  EXPECT_EQ(
      (*st)->recurrent(0).shape(),
      (kv::RecurrentShape{
          .conv_channels = 192, .conv_taps = 3, .n_head = 4, .head_dim = 32, .state_cols = 16}));
  EXPECT_EQ((*st)->recurrent_bytes(), 4u * (192 * 3 + 4 * 32 * 16) * 4);
}

// The fixture rewritten: without some tensors, with a key set to a number, a float or an array.
struct GraniteRewrite {
  std::vector<std::string> drop;
  std::string key;
  std::vector<int32_t> value;  // one element: a u32, else an i32 array
  float f = 0.f;               // with key and no value: an f32
  std::string reshape;         // this tensor written with the dims `dims`
  std::vector<int64_t> dims;
};

std::string granite_load_error(const GraniteRewrite& r) {
  auto f = io::GgufFile::open(granite_fixture(), io::GgufFile::Load::kRead);
  if (!f.ok()) return "open: " + f.message();
  io::GgufWriter out;
  for (const auto& [k, v] : (*f)->metadata()) out.set(k, v);
  if (!r.key.empty()) {
    out.set(r.key, r.value.empty()       ? io::GgufValue::make_f32(r.f)
                   : r.value.size() == 1 ? io::GgufValue::make_u32(r.value[0])
                                         : io::GgufValue::make_i32_array(r.value));
  }
  for (const auto& t : (*f)->tensors()) {
    if (std::find(r.drop.begin(), r.drop.end(), t.name) != r.drop.end()) continue;
    out.add_tensor(t.name, t.type, t.name == r.reshape ? r.dims : t.dims,
                   std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  auto g = io::GgufFile::from_bytes(out.to_bytes(), "g.gguf");
  if (!g.ok()) return "gguf: " + g.message();
  auto m = model::Model::from_file(std::move(g).value());
  return m.ok() ? "" : m.message();
}

void expect_one_error_line(const std::string& e, const std::string& what) {
  EXPECT_NE(e.find(what), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(GraniteHybrid, BadFilesAreOneErrorNamingWhatIsWrong) {
  const std::string a = "granitehybrid.";
  EXPECT_EQ(granite_load_error({}), "");
  // A conv kernel of 0, of 1 (no state to keep) and absurd.
  for (int k : {0, 1, 100000}) {
    expect_one_error_line(granite_load_error({.key = a + "ssm.conv_kernel", .value = {k}}),
                          a + "ssm.conv_kernel " + std::to_string(k) + " is out of range");
  }
  // A conv kernel, state size, inner size or group count that disagrees with the tensors.
  expect_one_error_line(granite_load_error({.key = a + "ssm.conv_kernel", .value = {3}}),
                        "blk.0.ssm_conv1d.weight");
  expect_one_error_line(granite_load_error({.key = a + "ssm.state_size", .value = {32}}),
                        "blk.0.ssm_in.weight");
  expect_one_error_line(granite_load_error({.key = a + "ssm.inner_size", .value = {256}}),
                        "blk.0.ssm_in.weight");
  expect_one_error_line(granite_load_error({.key = a + "ssm.group_count", .value = {1}}),
                        "blk.0.ssm_in.weight");
  // Heads that do not divide the inner size, groups that do not divide the heads.
  expect_one_error_line(granite_load_error({.key = a + "ssm.time_step_rank", .value = {3}}),
                        "implausible Mamba2 shape");
  expect_one_error_line(granite_load_error({.key = a + "ssm.group_count", .value = {3}}),
                        "implausible Mamba2 shape");
  // The pattern names a Mamba2 layer where the file has attention tensors, and the other way
  // round; no attention layer at all.
  expect_one_error_line(
      granite_load_error({.key = a + "attention.head_count_kv", .value = {0, 0, 0, 0, 0, 2}}),
      "makes layer 2 a Mamba2 layer, but it has no 'blk.2.ssm_in.weight' (it has "
      "'blk.2.attn_q.weight')");
  expect_one_error_line(
      granite_load_error({.key = a + "attention.head_count_kv", .value = {2, 0, 2, 0, 0, 2}}),
      "makes layer 0 an attention layer, but it has no 'blk.0.attn_q.weight' (it has "
      "'blk.0.ssm_in.weight')");
  expect_one_error_line(
      granite_load_error({.key = a + "attention.head_count_kv", .value = {0, 0, 0, 0, 0, 0}}),
      a + "attention.head_count_kv leaves no attention layer");
  // Tensors missing (the conv's bias, the skip, the norm: each changes the arithmetic).
  for (const char* t : {"blk.0.ssm_conv1d.bias", "blk.1.ssm_d", "blk.3.ssm_norm.weight",
                        "blk.4.ssm_a", "blk.0.ssm_dt.bias", "blk.1.ssm_out.weight"}) {
    expect_one_error_line(granite_load_error({.drop = {t}}), t);
  }
  // Trailing dims of 1 are no change of shape (ggml's rule: llama-quantize writes a one-group
  // ssm_norm [D, 1] back as [D]); another shape is.
  EXPECT_EQ(granite_load_error({.reshape = "blk.0.ssm_dt.bias", .dims = {4, 1}}), "");
  EXPECT_EQ(granite_load_error({.reshape = "blk.0.ssm_dt.bias", .dims = {4, 1, 1}}), "");
  expect_one_error_line(granite_load_error({.reshape = "blk.0.ssm_dt.bias", .dims = {2, 2}}),
                        "tensor 'blk.0.ssm_dt.bias' has shape [2, 2], expected [4]");
  // A negative multiplier; keys llama.cpp does not read for this family.
  expect_one_error_line(granite_load_error({.key = a + "residual_scale", .f = -1.f}),
                        a + "residual_scale -1 is invalid");
  expect_one_error_line(granite_load_error({.key = a + "attention.sliding_window", .value = {16}}),
                        a + "attention.sliding_window");
}

}  // namespace
}  // namespace tova::testing
