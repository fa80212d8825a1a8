// The falcon-h1 family (attention and Mamba2 side by side in every layer) on its fixture
// (tests/data/arch/falcon-h1-f32.gguf): the layer plan (every layer one K/V layer and one
// recurrent state), the optional parts a converted file may lack (the conv bias: none equals a
// zero bias), and bad files each one error line naming the key or tensor at fault. What every
// hybrid shares (prompt at once equals token by token, policies bound only the attention rows,
// clone, followers, session files) runs for falcon-h1 in qwen35_test.cpp's Hybrid suite; its
// goldens in arch_golden_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/layer_kinds.h"
#include "model/model_test_util.h"
#include "model/weights.h"

// Its own namespace: test sources are compiled in batches (one translation unit for several).
namespace tova::testing::falcon_h1 {
namespace {

std::string falcon_fixture() {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/falcon-h1-f32.gguf";
}

TEST(FalconH1, EveryLayerHoldsKvAndAMamba2State) {
  auto m = model::Model::load(falcon_fixture());
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layer, 4);
  EXPECT_EQ(c.rope.mode, kernels::RopeMode::kNeox);
  EXPECT_EQ(c.rope.n_rot, 16);  // no rope.dimension_count: the whole head
  EXPECT_TRUE(c.layer_nope.empty());
  EXPECT_EQ(c.n_attention_layers(), 4);
  EXPECT_EQ(c.n_recurrent_states(), 4);
  for (int il = 0; il < 4; ++il) {
    SCOPED_TRACE(il);
    const model::LayerPlan& lp = (*m)->plan()[il];
    EXPECT_EQ(lp.mixer, model::MixerKind::kAttnMamba2);
    EXPECT_EQ(lp.holds, model::MixerState::kKvAndRecurrent);
    EXPECT_EQ(lp.state, il);
    EXPECT_EQ(lp.recurrent, il);
    EXPECT_EQ((*m)->weights().layers[il].ffn_kind, model::FfnKind::kDense);
  }
  auto st = runtime::make_state(**m, cache_options("tova", 8), 0);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ((*st)->n_layer(), 4);
  ASSERT_EQ((*st)->n_recurrent(), 4);
  EXPECT_EQ(
      (*st)->recurrent(0).shape(),
      (kv::RecurrentShape{
          .conv_channels = 160, .conv_taps = 3, .n_head = 6, .head_dim = 16, .state_cols = 16}));
}

// The fixture rewritten: tensors dropped, zeroed or added (a copy of another), a key set.
struct FalconRewrite {
  std::vector<std::string> drop;
  std::vector<std::string> zero;
  std::string add, add_from;
  std::string key;
  std::vector<int32_t> value;  // one element: a u32, else an i32 array
  float f = 0.f;               // with key and no value: an f32
  std::string drop_key;
};

Result<std::unique_ptr<model::Model>> load_rewritten(const FalconRewrite& r) {
  TOVA_ASSIGN_OR_RETURN(auto f, io::GgufFile::open(falcon_fixture(), io::GgufFile::Load::kRead));
  io::GgufWriter out;
  for (const auto& [k, v] : f->metadata()) {
    if (k != r.drop_key) out.set(k, v);
  }
  if (!r.key.empty()) {
    out.set(r.key, r.value.empty()       ? io::GgufValue::make_f32(r.f)
                   : r.value.size() == 1 ? io::GgufValue::make_u32(r.value[0])
                                         : io::GgufValue::make_i32_array(r.value));
  }
  for (const auto& t : f->tensors()) {
    if (std::find(r.drop.begin(), r.drop.end(), t.name) != r.drop.end()) continue;
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    if (std::find(r.zero.begin(), r.zero.end(), t.name) != r.zero.end()) {
      std::fill(data.begin(), data.end(), 0);
    }
    out.add_tensor(t.name, t.type, t.dims, data);
    if (t.name == r.add_from) out.add_tensor(r.add, t.type, t.dims, data);
  }
  TOVA_ASSIGN_OR_RETURN(auto g, io::GgufFile::from_bytes(out.to_bytes(), "f.gguf"));
  return model::Model::from_file(std::move(g));
}

std::string load_error(const FalconRewrite& r) {
  auto m = load_rewritten(r);
  return m.ok() ? "" : m.message();
}

void expect_one_error_line(const std::string& e, const std::string& what) {
  EXPECT_FALSE(e.empty()) << what;
  EXPECT_NE(e.find(what), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

std::vector<std::string> every_layer(const std::string& suffix) {
  std::vector<std::string> names;
  for (int il = 0; il < 4; ++il) names.push_back("blk." + std::to_string(il) + "." + suffix);
  return names;
}

// A file without ssm_conv1d.bias (mamba_conv_bias false) computes exactly as one whose biases
// are zeros; without ssm_norm (mamba_rms_norm false) it loads and computes something else
// (checked against llama.cpp by scripts/check_heldback.sh's falcon-h1-b, which has none).
TEST(FalconH1, OptionalPartsMayBeAbsent) {
  TOVA_REQUIRE_SHARED();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(24);
  ThreadPool pool(2);
  auto zero = load_rewritten({.zero = every_layer("ssm_conv1d.bias")});
  auto none = load_rewritten({.drop = every_layer("ssm_conv1d.bias")});
  ASSERT_TRUE(zero.ok() && none.ok()) << zero.message() << none.message();
  EXPECT_TRUE((*none)->weights().layers[0].mamba2.conv_b.empty());
  const auto a = all_logits(**zero, ids, cache_options("full", 0), 8, pool);
  const auto b = all_logits(**none, ids, cache_options("full", 0), 8, pool);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  auto plain = load_rewritten({});
  auto no_norm = load_rewritten({.drop = every_layer("ssm_norm.weight")});
  ASSERT_TRUE(plain.ok() && no_norm.ok()) << no_norm.message();
  const auto p = all_logits(**plain, ids, cache_options("full", 0), 8, pool);
  const auto q = all_logits(**no_norm, ids, cache_options("full", 0), 8, pool);
  EXPECT_NE(0, std::memcmp(p.data(), q.data(), p.size() * sizeof(float)));
}

TEST(FalconH1, BadFilesAreOneErrorNamingWhatIsWrong) {
  const std::string a = "falcon-h1.";
  EXPECT_EQ(load_error({}), "");
  // A state size, inner size or head count that disagrees with the tensors.
  expect_one_error_line(load_error({.key = a + "ssm.state_size", .value = {32}}),
                        "blk.0.ssm_in.weight");
  expect_one_error_line(load_error({.key = a + "ssm.inner_size", .value = {48}}),
                        "blk.0.ssm_in.weight");
  expect_one_error_line(load_error({.key = a + "ssm.time_step_rank", .value = {5}}),
                        a + "ssm.time_step_rank 5");
  // A conv kernel of 0, 1 and absurd; one that disagrees with the tensors.
  for (int k : {0, 1, 100000}) {
    expect_one_error_line(load_error({.key = a + "ssm.conv_kernel", .value = {k}}),
                          a + "ssm.conv_kernel " + std::to_string(k) + " is out of range");
  }
  expect_one_error_line(load_error({.key = a + "ssm.conv_kernel", .value = {3}}),
                        "blk.0.ssm_conv1d.weight");
  // A missing tensor is named, attention's, Mamba2's or the feed-forward's.
  for (const char* t : {"blk.0.attn_k.weight", "blk.1.ssm_in.weight", "blk.2.ssm_a", "blk.3.ssm_d",
                        "blk.1.ssm_dt.bias", "blk.2.ssm_out.weight", "blk.3.ffn_norm",
                        "blk.0.ffn_gate.weight", "blk.2.attn_norm.weight"}) {
    expect_one_error_line(load_error({.drop = {t}}), std::string("missing tensor '") + t + "'");
  }
  // Tensors llama.cpp loads for this family but never applies: refused by name.
  expect_one_error_line(
      load_error({.add = "blk.1.attn_output.bias", .add_from = "blk.1.attn_norm.weight"}),
      "tensor 'blk.1.attn_output.bias' is not applied by llama.cpp's falcon-h1 graph");
  expect_one_error_line(load_error({.add = "rope_freqs.weight", .add_from = "blk.0.ssm_d"}),
                        "tensor 'rope_freqs.weight' is not applied");
  // The feed-forward norm under the suffixed name llama.cpp does not read; one bias of three.
  expect_one_error_line(load_error({.add = "blk.0.ffn_norm.weight", .add_from = "blk.0.ffn_norm"}),
                        "tensor 'blk.0.ffn_norm.weight' is not used");
  expect_one_error_line(
      load_error({.add = "blk.2.attn_q.bias", .add_from = "blk.2.attn_norm.weight"}),
      "missing tensor 'blk.2.attn_k.bias'");
  expect_one_error_line(
      load_error({.add = "blk.0.ffn_down.bias", .add_from = "blk.0.attn_norm.weight"}),
      "missing tensor 'blk.0.ffn_gate.bias'");
  // Required keys absent (llama.cpp requires them too).
  for (const char* k : {"attention.layer_norm_rms_epsilon", "ssm.state_size", "ssm.group_count"}) {
    expect_one_error_line(load_error({.drop_key = a + k}), a + k);
  }
  // Keys llama.cpp does not read for this family (multipliers).
  expect_one_error_line(load_error({.key = a + "attention.scale", .f = 0.5f}),
                        a + "attention.scale");
  expect_one_error_line(load_error({.key = a + "embedding_scale", .f = 2.f}),
                        a + "embedding_scale");
}

}  // namespace
}  // namespace tova::testing::falcon_h1
