// The nemotron_h family (Nemotron-H: one block per layer, Mamba2, attention without RoPE or the
// squared-ReLU feed-forward) on its fixture (tests/data/arch, "M-M*-M*-"): the layer plan its
// feed_forward_length / head_count_kv arrays make, the states each sequence keeps (nothing for
// a feed-forward layer), the squared-ReLU block against a hand computation, and bad files each
// one error naming the key or tensor at fault. What every hybrid shares (prompt at once equals
// token by token, policies bound only the attention layers, clone, followers, session files)
// runs for nemotron_h in qwen35_test.cpp's Hybrid suite; its goldens in arch_golden_test.cpp.
// nemotron_h_moe (the same layers, the feed-forward ones a sigmoid-routed mixture of ungated
// experts with a shared expert, and latent experts in its -latent fixture): its keys, and bad
// files; routing that matters runs in moe_test.cpp's MoeFixture suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/layer_kinds.h"
#include "model/model_test_util.h"
#include "model/weights.h"

namespace tova::testing {
namespace {

std::string nemotron_fixture() {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/nemotron_h-f32.gguf";
}

constexpr const char* kPattern = "M-M*-M*-";

// An F32 matrix view of w [n_out][n_in].
kernels::WeightMatrix f32_matrix(const float* w, int64_t n_in, int64_t n_out) {
  return {.type = GgmlType::kF32,
          .data = reinterpret_cast<const uint8_t*>(w),
          .n_in = n_in,
          .n_out = n_out,
          .row_bytes = static_cast<uint64_t>(n_in) * 4};
}

TEST(NemotronH, ThePatternMakesOneBlockPerLayer) {
  auto m = model::Model::load(nemotron_fixture());
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layer, 8);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.n_ff, 160);
  EXPECT_EQ(c.mamba2.n_head, 4);
  EXPECT_EQ(c.mamba2.n_group, 2);
  EXPECT_EQ(c.n_attention_layers(), 2);
  ASSERT_EQ(c.layer_nope.size(), 8u);  // no RoPE anywhere
  for (uint8_t nope : c.layer_nope) EXPECT_EQ(nope, 1);
  int ir = 0, ia = 0;
  for (int il = 0; il < 8; ++il) {
    SCOPED_TRACE(il);
    const char b = kPattern[il];
    const model::LayerPlan& lp = (*m)->plan()[il];
    const model::LayerWeights& L = (*m)->weights().layers[il];
    EXPECT_EQ(c.recurrent(il), b == 'M');
    EXPECT_EQ(c.ffn_only(il), b == '-');
    EXPECT_EQ(c.n_ff_of(il), b == '-' ? 160 : 0);
    EXPECT_EQ(lp.mixer, b == 'M'   ? model::MixerKind::kMamba2
                        : b == '*' ? model::MixerKind::kAttention
                                   : model::MixerKind::kNone);
    EXPECT_EQ(lp.holds, b == 'M'   ? model::MixerState::kRecurrent
                        : b == '*' ? model::MixerState::kKv
                                   : model::MixerState::kNothing);
    EXPECT_EQ(lp.state, b == 'M' ? ir++ : b == '*' ? ia++ : -1);
    EXPECT_EQ(L.ffn_kind, b == '-' ? model::FfnKind::kReluSqr : model::FfnKind::kNone);
  }
  auto st = runtime::make_state(**m, cache_options("full", 0), 0);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ((*st)->n_layer(), 2);  // K/V: the attention layers alone
  ASSERT_EQ((*st)->n_recurrent(), 3);
  EXPECT_EQ((*st)->recurrent(0).shape(),
            (kv::RecurrentShape{
                .conv_channels = 192, .conv_taps = 3, .n_head = 4, .head_dim = 32, .state_cols = 16}));
}

// The squared-ReLU block on a 2-wide stream with a 3-wide feed-forward, by hand:
// h = rms_norm(x) (unit weights); u = up · h + up_b; x += down · max(u, 0)^2 + down_b.
TEST(NemotronH, TheSquaredReluBlockIsDownOfReluSquaredPlusBiases) {
  model::ModelConfig c;
  c.n_embd = 2;
  c.rms_eps = 1e-6f;
  const float up[] = {1.f, 0.f, 0.f, 1.f, 1.f, -1.f};      // [3][2]
  const float down[] = {1.f, 0.5f, 2.f, 0.f, -1.f, 1.f};   // [2][3]
  model::LayerWeights L;
  L.ffn_kind = model::FfnKind::kReluSqr;
  L.ffn_norm = {1.f, 1.f};
  L.w_up = f32_matrix(up, 2, 3);
  L.w_down = f32_matrix(down, 3, 2);
  L.ffn_up_b = {0.5f, -2.f, 0.f};
  L.ffn_down_b = {0.25f, -0.25f};
  model::ForwardScratch s;
  s.x = {3.f, 4.f};  // rms 3.5355: h = (0.8485, 1.1314)
  ThreadPool pool(1);
  model::LayerPass p{.c = c, .s = s, .pool = pool, .n = 1};
  model::relu2_ffn_block(p, L);
  const double r = std::sqrt((9.0 + 16.0) / 2 + 1e-6), h0 = 3 / r, h1 = 4 / r;
  const double u0 = std::max(h0 + 0.5, 0.0), u1 = std::max(h1 - 2.0, 0.0),
               u2 = std::max(h0 - h1, 0.0);
  const double y0 = u0 * u0 * 1 + u1 * u1 * 0.5 + u2 * u2 * 2 + 0.25;
  const double y1 = u0 * u0 * 0 + u1 * u1 * -1 + u2 * u2 * 1 - 0.25;
  EXPECT_NEAR(s.x[0], 3 + y0, 1e-4);
  EXPECT_NEAR(s.x[1], 4 + y1, 1e-4);
}

// The fixture rewritten: without some tensors, with a key set to a number, a float or an array.
struct NemotronRewrite {
  std::vector<std::string> drop;
  std::string key;
  std::vector<int32_t> value;  // one element: a u32, else an i32 array
  float f = 0.f;               // with key and no value: an f32
  std::string add;             // a tensor added, a copy of `add_from`
  std::string add_from;
};

std::string nemotron_load_error(const NemotronRewrite& r) {
  auto f = io::GgufFile::open(nemotron_fixture(), io::GgufFile::Load::kRead);
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
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    if (t.name == r.add_from) {
      out.add_tensor(r.add, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
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

TEST(NemotronH, BadFilesAreOneErrorNamingWhatIsWrong) {
  const std::string a = "nemotron_h.";
  EXPECT_EQ(nemotron_load_error({}), "");
  // A conv kernel of 0, 1 and absurd; one that disagrees with the tensors.
  for (int k : {0, 1, 100000}) {
    expect_one_error_line(nemotron_load_error({.key = a + "ssm.conv_kernel", .value = {k}}),
                          a + "ssm.conv_kernel " + std::to_string(k) + " is out of range");
  }
  expect_one_error_line(nemotron_load_error({.key = a + "ssm.conv_kernel", .value = {3}}),
                        "blk.0.ssm_conv1d.weight");
  expect_one_error_line(nemotron_load_error({.key = a + "ssm.state_size", .value = {32}}),
                        "blk.0.ssm_in.weight");
  // The pattern names a kind the layer has no tensors for, in each direction.
  const std::string ff = a + "feed_forward_length", kv = a + "attention.head_count_kv";
  expect_one_error_line(
      nemotron_load_error({.key = ff, .value = {160, 160, 0, 0, 160, 0, 0, 160}}),
      "makes layer 0 a feed-forward layer, but it has no 'blk.0.ffn_up.weight'");
  expect_one_error_line(nemotron_load_error({.key = ff, .value = {0, 0, 0, 0, 160, 0, 0, 160}}),
                        "(" + ff + " 0 and " + kv + " 0 at layer 1) makes layer 1 a Mamba2 "
                        "layer, but it has no 'blk.1.ssm_in.weight'");
  expect_one_error_line(nemotron_load_error({.key = kv, .value = {2, 0, 0, 2, 0, 0, 2, 0}}),
                        "makes layer 0 an attention layer, but it has no 'blk.0.attn_q.weight'");
  expect_one_error_line(nemotron_load_error({.key = kv, .value = {0, 2, 0, 2, 0, 0, 2, 0}}),
                        "layer 1 has a feed-forward (" + ff + " 160) and attention (" + kv +
                            " 2)");
  expect_one_error_line(nemotron_load_error({.key = kv, .value = {0, 0, 0, 0, 0, 0, 0, 0}}),
                        kv + " leaves no attention layer");
  expect_one_error_line(nemotron_load_error({.key = ff, .value = {160}}),
                        "must be per-layer arrays");
  // Mamba2 tensors missing (each changes the arithmetic).
  for (const char* t : {"blk.0.ssm_conv1d.bias", "blk.2.ssm_d", "blk.5.ssm_norm.weight",
                        "blk.0.ssm_a", "blk.2.ssm_dt.bias", "blk.5.ssm_out.weight",
                        "blk.1.ffn_down.weight", "blk.3.attn_v.weight"}) {
    expect_one_error_line(nemotron_load_error({.drop = {t}}), t);
  }
  // A gate on the squared-ReLU feed-forward, a norm of its own: tensors the family does not
  // use are refused by name; a q bias without its k and v biases too.
  expect_one_error_line(nemotron_load_error({.add = "blk.1.ffn_gate.weight",
                                             .add_from = "blk.1.ffn_up.weight"}),
                        "blk.1.ffn_gate.weight");
  expect_one_error_line(nemotron_load_error({.add = "blk.4.ffn_norm.weight",
                                             .add_from = "blk.4.attn_norm.weight"}),
                        "blk.4.ffn_norm.weight");
  expect_one_error_line(nemotron_load_error({.add = "blk.3.attn_output.bias",
                                             .add_from = "blk.3.attn_norm.weight"}),
                        "");  // read: llama.cpp adds it where present
  // Keys llama.cpp does not read for this family: Granite's multipliers, a window.
  expect_one_error_line(nemotron_load_error({.key = a + "attention.scale", .f = 0.5f}),
                        a + "attention.scale");
  expect_one_error_line(nemotron_load_error({.key = a + "residual_scale", .f = 0.5f}),
                        a + "residual_scale");
  expect_one_error_line(nemotron_load_error({.key = a + "expert_count", .value = {4}}),
                        a + "expert_count");
}

std::string moe_load_error(const std::string& fixture, const NemotronRewrite& r) {
  auto f = io::GgufFile::open(std::string(TOVA_TEST_DATA_DIR) + "/arch/" + fixture + "-f32.gguf",
                              io::GgufFile::Load::kRead);
  if (!f.ok()) return "open: " + f.message();
  io::GgufWriter out;
  for (const auto& [k, v] : (*f)->metadata()) {
    if (k != r.key || !r.value.empty() || r.f != 0.f) out.set(k, v);  // a key with neither: dropped
  }
  if (!r.key.empty() && (!r.value.empty() || r.f != 0.f)) {
    out.set(r.key, r.value.empty() ? io::GgufValue::make_f32(r.f)
                                   : io::GgufValue::make_u32(r.value[0]));
  }
  for (const auto& t : (*f)->tensors()) {
    if (std::find(r.drop.begin(), r.drop.end(), t.name) != r.drop.end()) continue;
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    if (t.name == r.add_from) {
      out.add_tensor(r.add, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
  }
  auto g = io::GgufFile::from_bytes(out.to_bytes(), "g.gguf");
  if (!g.ok()) return "gguf: " + g.message();
  auto m = model::Model::from_file(std::move(g).value());
  return m.ok() ? "" : m.message();
}

TEST(NemotronHMoe, TheMixtureIsSigmoidRoutedWithASharedExpert) {
  for (const char* name : {"nemotron_h_moe", "nemotron_h_moe-latent"}) {
    SCOPED_TRACE(name);
    auto m = model::Model::load(std::string(TOVA_TEST_DATA_DIR) + "/arch/" + name + "-f32.gguf");
    ASSERT_TRUE(m.ok()) << m.message();
    const model::ModelConfig& c = (*m)->config();
    EXPECT_EQ(c.n_expert, 8);
    EXPECT_EQ(c.n_expert_used, 2);
    EXPECT_EQ(c.n_ff_exp, 64);
    EXPECT_EQ(c.n_ff_shexp, 96);
    EXPECT_EQ(c.moe_gating, model::MoeGating::kSigmoid);
    EXPECT_TRUE(c.expert_weights_norm);
    EXPECT_EQ(c.expert_weights_scale, 2.5f);
    EXPECT_EQ(c.moe_latent, std::string(name) == "nemotron_h_moe" ? 0 : 32);
    for (int il = 0; il < 8; ++il) {
      const model::LayerWeights& L = (*m)->weights().layers[il];
      EXPECT_EQ(L.ffn_kind, kPattern[il] == '-' ? model::FfnKind::kMoe : model::FfnKind::kNone);
      if (kPattern[il] != '-') continue;
      EXPECT_TRUE(L.moe.gate.empty());  // ungated experts: relu(up)^2
      EXPECT_EQ(L.moe.select_bias.size(), 8u);
      EXPECT_TRUE(L.moe.has_shared());
      EXPECT_EQ(L.moe.shared_gate.n_out, 0);
      EXPECT_EQ(L.moe.latent_down.n_out, c.moe_latent);
    }
  }
}

TEST(NemotronHMoe, BadFilesAreOneErrorNamingWhatIsWrong) {
  const std::string a = "nemotron_h_moe.";
  EXPECT_EQ(moe_load_error("nemotron_h_moe", {}), "");
  EXPECT_EQ(moe_load_error("nemotron_h_moe-latent", {}), "");
  // Grouped routing, another gating, required widths absent (dropped).
  expect_one_error_line(
      moe_load_error("nemotron_h_moe", {.key = a + "expert_group_count", .value = {2}}),
      a + "expert_group_count 2: grouped expert routing is not implemented");
  expect_one_error_line(
      moe_load_error("nemotron_h_moe", {.key = a + "expert_gating_func", .value = {1}}),
      a + "expert_gating_func");
  for (const char* k : {"expert_feed_forward_length", "expert_shared_feed_forward_length"}) {
    expect_one_error_line(moe_load_error("nemotron_h_moe", {.key = a + k}), a + k + " is absent");
  }
  expect_one_error_line(
      moe_load_error("nemotron_h_moe", {.key = a + "nextn_predict_layers", .value = {1}}),
      a + "nextn_predict_layers 1: multi-token prediction blocks are not implemented");
  // The selection bias, an expert tensor, the shared expert, a latent projection missing; a
  // gate on the experts or latent projections in a file without moe_latent_size.
  for (const char* t : {"blk.1.exp_probs_b.bias", "blk.4.ffn_down_exps.weight",
                        "blk.7.ffn_up_shexp.weight"}) {
    expect_one_error_line(moe_load_error("nemotron_h_moe", {.drop = {t}}), t);
  }
  expect_one_error_line(
      moe_load_error("nemotron_h_moe-latent", {.drop = {"blk.1.ffn_latent_up.weight"}}),
      "blk.1.ffn_latent_up.weight");
  // Without moe_latent_size the experts are n_embd wide: the latent fixture's are not.
  expect_one_error_line(moe_load_error("nemotron_h_moe-latent", {.key = a + "moe_latent_size"}),
                        "tensor 'blk.1.ffn_up_exps.weight' has shape [32, 64, 8], expected [64, "
                        "64, 8]");
  expect_one_error_line(moe_load_error("nemotron_h_moe", {.add = "blk.1.ffn_gate_exps.weight",
                                                          .add_from = "blk.1.ffn_up_exps.weight"}),
                        "blk.1.ffn_gate_exps.weight");
}

}  // namespace
}  // namespace tova::testing
