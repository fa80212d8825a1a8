// The loader reads every tensor and "{arch}." key of a file or refuses it, naming what it did not
// read; each architecture file reads its own tensors (docs/ARCHITECTURES.md).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <cstring>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/weights.h"

namespace tova::model {
namespace {

using io::GgufValue;

constexpr int kEmbd = 8, kHead = 2, kHeadKv = 1, kHeadDim = 4, kFf = 16, kVocab = 10;
// Mixtures of experts: 4 experts, top 2, experts 8 wide (llama's: feed_forward_length), a
// shared expert 12 wide (qwen2moe).
constexpr int kExpert = 4, kExpertUsed = 2, kFfExp = 8, kFfShexp = 12;

std::vector<uint8_t> f32_bytes(int64_t n, float v = 0.01f) {
  std::vector<float> x(n, v);
  std::vector<uint8_t> b(n * 4);
  std::memcpy(b.data(), x.data(), b.size());
  return b;
}

// A one-layer model of `arch` with every tensor and key a converted file of the family has
// (with n_expert > 0: a mixture of experts' feed-forward instead of the dense one).
struct MiniFile {
  std::string arch;
  io::GgufWriter w;

  explicit MiniFile(std::string a, int n_expert = 0) : arch(std::move(a)) {
    w.set("general.architecture", GgufValue::make_str(arch));
    key("embedding_length", GgufValue::make_u32(kEmbd));
    key("block_count", GgufValue::make_u32(1));
    key("feed_forward_length", GgufValue::make_u32(kFf));
    key("attention.head_count", GgufValue::make_u32(kHead));
    key("attention.head_count_kv", GgufValue::make_u32(kHeadKv));
    key("attention.layer_norm_rms_epsilon", GgufValue::make_f32(1e-6f));
    key("rope.freq_base", GgufValue::make_f32(10000.f));
    key("context_length", GgufValue::make_u32(128));
    tensor("token_embd.weight", {kEmbd, kVocab});
    tensor("output_norm.weight", {kEmbd});
    const std::string p = "blk.0.";
    tensor(p + "attn_norm.weight", {kEmbd});
    if (arch == "phi3") {
      key("rope.scaling.original_context_length", GgufValue::make_u32(128));
      key("attention.sliding_window", GgufValue::make_u32(0));
      tensor(p + "attn_qkv.weight", {kEmbd, (kHead + 2 * kHeadKv) * kHeadDim});
    } else {
      tensor(p + "attn_q.weight", {kEmbd, kHead * kHeadDim});
      tensor(p + "attn_k.weight", {kEmbd, kHeadKv * kHeadDim});
      tensor(p + "attn_v.weight", {kEmbd, kHeadKv * kHeadDim});
    }
    tensor(p + "attn_output.weight", {kHead * kHeadDim, kEmbd});
    // gpt-oss names its feed-forward norm post_attention_norm.
    tensor(p + (arch == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight"), {kEmbd});
    if (n_expert > 0) {
      key("expert_count", GgufValue::make_u32(n_expert));
      key("expert_used_count", GgufValue::make_u32(kExpertUsed));
      const int ff = arch == "llama" ? kFf : kFfExp;
      if (arch != "llama") key("expert_feed_forward_length", GgufValue::make_u32(kFfExp));
      tensor(p + "ffn_gate_inp.weight", {kEmbd, n_expert});
      tensor(p + "ffn_gate_exps.weight", {kEmbd, ff, n_expert});
      tensor(p + "ffn_up_exps.weight", {kEmbd, ff, n_expert});
      tensor(p + "ffn_down_exps.weight", {ff, kEmbd, n_expert});
      if (arch == "qwen2moe") {
        key("expert_shared_feed_forward_length", GgufValue::make_u32(kFfShexp));
        tensor(p + "ffn_gate_inp_shexp.weight", {kEmbd});
        tensor(p + "ffn_gate_shexp.weight", {kEmbd, kFfShexp});
        tensor(p + "ffn_up_shexp.weight", {kEmbd, kFfShexp});
        tensor(p + "ffn_down_shexp.weight", {kFfShexp, kEmbd});
      }
    } else if (arch == "phi3") {
      tensor(p + "ffn_up.weight", {kEmbd, 2 * kFf});
    } else {
      tensor(p + "ffn_gate.weight", {kEmbd, kFf});
      tensor(p + "ffn_up.weight", {kEmbd, kFf});
    }
    if (n_expert == 0) tensor(p + "ffn_down.weight", {kFf, kEmbd});
    if (arch == "gpt-oss") {
      key("attention.sliding_window", GgufValue::make_u32(128));
      key("rope.scaling.type", GgufValue::make_str("yarn"));
      key("rope.scaling.factor", GgufValue::make_f32(32.f));
      key("rope.scaling.original_context_length", GgufValue::make_u32(4096));
      tensor(p + "attn_output.bias", {kEmbd});
      tensor(p + "attn_sinks.weight", {kHead});
      tensor(p + "ffn_gate_inp.bias", {n_expert});
      tensor(p + "ffn_gate_exps.bias", {kFfExp, n_expert});
      tensor(p + "ffn_up_exps.bias", {kFfExp, n_expert});
      tensor(p + "ffn_down_exps.bias", {kEmbd, n_expert});
    }
    if (arch == "qwen2" || arch == "qwen2moe" || arch == "gpt-oss") {
      tensor(p + "attn_q.bias", {kHead * kHeadDim});
      tensor(p + "attn_k.bias", {kHeadKv * kHeadDim});
      tensor(p + "attn_v.bias", {kHeadKv * kHeadDim});
    }
    const bool gemma = arch == "gemma2" || arch == "gemma3";
    if (arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3") {
      tensor(p + "attn_q_norm.weight", {kHeadDim});
      tensor(p + "attn_k_norm.weight", {kHeadDim});
    }
    if (arch == "qwen3" || arch == "qwen3moe" || gemma || arch == "gpt-oss") {
      key("attention.key_length", GgufValue::make_u32(kHeadDim));
      key("attention.value_length", GgufValue::make_u32(kHeadDim));
    }
    if (gemma) {
      tensor(p + "post_attention_norm.weight", {kEmbd});
      tensor(p + "post_ffw_norm.weight", {kEmbd});
      key("attention.sliding_window", GgufValue::make_u32(64));
    }
    if (arch == "gemma2") {
      key("attn_logit_softcapping", GgufValue::make_f32(50.f));
      key("final_logit_softcapping", GgufValue::make_f32(30.f));
    }
  }
  void key(const std::string& suffix, GgufValue v) { w.set(arch + "." + suffix, std::move(v)); }
  void tensor(const std::string& name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    w.add_tensor(name, GgmlType::kF32, dims, f32_bytes(n));
  }
  // The same file without the named tensors.
  void drop(std::initializer_list<std::string> names) {
    auto f = io::GgufFile::from_bytes(w.to_bytes(), "mini.gguf");
    ASSERT_TRUE(f.ok());
    io::GgufWriter out;
    for (const auto& [k, v] : (*f)->metadata()) out.set(k, v);
    for (const auto& t : (*f)->tensors()) {
      if (std::find(names.begin(), names.end(), t.name) != names.end()) continue;
      out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
    w = out;
  }
  // load_config then load_weights; the first error's message, or "" when both succeed.
  std::string load_error(ModelWeights* out = nullptr) {
    auto f = io::GgufFile::from_bytes(w.to_bytes(), "mini.gguf");
    if (!f.ok()) return "gguf: " + f.message();
    auto c = load_config(**f);
    if (!c.ok()) return c.message();
    auto wt = load_weights(**f, *c);
    if (!wt.ok()) return wt.message();
    if (out) *out = *wt;
    return "";
  }
};

TEST(ArchLoader, EveryFamilyLoadsItsConvertedTensorsAndKeys) {
  const std::pair<const char*, size_t> cases[] = {
      {"llama", 11}, {"qwen2", 14}, {"qwen3", 13}, {"phi3", 8}, {"gemma2", 13}, {"gemma3", 15}};
  for (const auto& [arch, n_tensors] : cases) {
    MiniFile m(arch);
    ModelWeights w;
    EXPECT_EQ(m.load_error(&w), "") << arch;
    EXPECT_EQ(w.tensors_read.size(), n_tensors) << arch;
    EXPECT_EQ(!w.layers[0].bq.empty(), m.arch == "qwen2") << arch;
    const bool qk_norm = m.arch == "qwen3" || m.arch == "gemma3";
    EXPECT_EQ(!w.layers[0].q_norm.empty(), qk_norm) << arch;
    EXPECT_EQ(!w.layers[0].k_norm.empty(), qk_norm) << arch;
    EXPECT_EQ(!w.layers[0].attn_post_norm.empty(), m.arch.starts_with("gemma")) << arch;
    EXPECT_EQ(!w.layers[0].ffn_post_norm.empty(), m.arch.starts_with("gemma")) << arch;
  }
}

TEST(ArchLoader, KeysReadAreRecorded) {
  MiniFile m("llama");
  auto f = io::GgufFile::from_bytes(m.w.to_bytes(), "mini.gguf");
  ASSERT_TRUE(f.ok());
  auto c = load_config(**f);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->keys_read.size(), 8u);
  EXPECT_EQ(c->keys_read.front(), "llama.attention.head_count");
}

TEST(ArchLoader, AnUnusedTensorIsOneErrorNamingIt) {
  MiniFile llama("llama");
  llama.tensor("blk.0.attn_q_norm.weight", {kHeadDim});  // qwen3's, in a llama file
  EXPECT_EQ(llama.load_error(),
            "mini.gguf: tensor 'blk.0.attn_q_norm.weight' is not used by tova's 'llama' "
            "architecture (a model that needs it would compute something else; see "
            "docs/ARCHITECTURES.md)");
  MiniFile qwen2("qwen2");
  qwen2.tensor("rope_freqs.weight", {kHeadDim / 2});  // only llama reads frequency factors
  EXPECT_NE(qwen2.load_error().find("tensor 'rope_freqs.weight' is not used"), std::string::npos);
  MiniFile qwen3("qwen3");
  qwen3.tensor("blk.0.attn_q.bias", {kHead * kHeadDim});
  EXPECT_NE(qwen3.load_error().find("tensor 'blk.0.attn_q.bias' is not used"), std::string::npos);
  MiniFile extra_layer("llama");
  extra_layer.tensor("blk.1.attn_norm.weight", {kEmbd});
  EXPECT_NE(extra_layer.load_error().find("'blk.1.attn_norm.weight' is not used"),
            std::string::npos);
}

TEST(ArchLoader, AMissingTensorIsOneErrorNamingIt) {
  MiniFile m("qwen3");
  io::GgufWriter w;  // the same file without attn_k_norm
  MiniFile full("qwen3");
  auto f = io::GgufFile::from_bytes(full.w.to_bytes(), "mini.gguf");
  ASSERT_TRUE(f.ok());
  for (const auto& [k, v] : (*f)->metadata()) w.set(k, v);
  for (const auto& t : (*f)->tensors()) {
    if (t.name == "blk.0.attn_k_norm.weight") continue;
    w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  m.w = w;
  EXPECT_EQ(m.load_error(), "mini.gguf: missing tensor 'blk.0.attn_k_norm.weight'");
}

TEST(ArchLoader, AnUnimplementedKeyIsOneErrorNamingIt) {
  // Each of these changes the arithmetic; tova does not implement it.
  const std::pair<const char*, GgufValue> keys[] = {
      {"attention.sliding_window", GgufValue::make_u32(4096)},
      {"attn_logit_softcapping", GgufValue::make_f32(50.f)},
      {"final_logit_softcapping", GgufValue::make_f32(30.f)},
      {"attention.layer_norm_epsilon", GgufValue::make_f32(1e-5f)},
  };
  for (const auto& [suffix, value] : keys) {
    MiniFile m("llama");
    m.key(suffix, value);
    EXPECT_EQ(m.load_error(),
              fmt::format("mini.gguf: metadata key 'llama.{}' is not implemented for "
                          "architecture 'llama' (it may change what the model computes; see "
                          "docs/ARCHITECTURES.md)",
                          suffix));
  }
}

TEST(ArchLoader, KeysThatChangeNothingAreAcceptedAndExpertsRefused) {
  MiniFile m("llama");
  m.key("expert_count", GgufValue::make_u32(0));
  m.key("expert_used_count", GgufValue::make_u32(0));
  m.key("tensor_data_layout", GgufValue::make_str("Meta AI original pth"));
  EXPECT_EQ(m.load_error(), "");
  MiniFile moe("qwen2");  // a dense family
  moe.key("expert_count", GgufValue::make_u32(8));
  EXPECT_EQ(moe.load_error(),
            "mini.gguf: qwen2.expert_count 8: mixture-of-experts models of architecture 'qwen2' "
            "are not implemented");
}

TEST(ArchLoader, MixturesOfExpertsLoadTheirRouterExpertsAndSharedExpert) {
  const std::tuple<const char*, size_t, int> cases[] = {
      {"qwen3moe", 14, kFfExp}, {"qwen2moe", 19, kFfExp}, {"llama", 12, kFf}};
  for (const auto& [arch, n_tensors, ff] : cases) {
    MiniFile m(arch, kExpert);
    ModelWeights w;
    ASSERT_EQ(m.load_error(&w), "") << arch;
    EXPECT_EQ(w.tensors_read.size(), n_tensors) << arch;
    const LayerWeights& l = w.layers[0];
    EXPECT_EQ(l.ffn_kind, FfnKind::kMoe) << arch;
    ASSERT_EQ(l.moe.gate.size(), static_cast<size_t>(kExpert)) << arch;
    EXPECT_EQ(l.moe.router.n_out, kExpert);
    EXPECT_EQ(l.moe.gate[3].n_out, ff);
    EXPECT_EQ(l.moe.down[3].n_in, ff);
    // Expert e's matrix starts e matrices into the 3-D tensor.
    EXPECT_EQ(l.moe.up[2].data - l.moe.up[0].data, 2 * ff * kEmbd * 4);
    EXPECT_EQ(l.moe.has_shared(), std::string(arch) == "qwen2moe") << arch;
  }
  // qwen3moe and Mixtral renormalize the chosen experts' weights, qwen2moe does not, unless
  // the file says otherwise.
  auto config = [](MiniFile& m) {
    auto f = io::GgufFile::from_bytes(m.w.to_bytes(), "mini.gguf");
    EXPECT_TRUE(f.ok());
    auto c = load_config(**f);
    EXPECT_TRUE(c.ok()) << c.message();
    return *c;
  };
  MiniFile q3("qwen3moe", kExpert), q2("qwen2moe", kExpert), mx("llama", kExpert);
  EXPECT_TRUE(config(q3).expert_weights_norm);
  EXPECT_FALSE(config(q2).expert_weights_norm);
  EXPECT_TRUE(config(mx).expert_weights_norm);
  EXPECT_EQ(config(q2).n_ff_shexp, kFfShexp);
  EXPECT_EQ(config(mx).n_ff_exp, kFf);
  q2.key("expert_weights_norm", GgufValue::make_bool(true));
  EXPECT_TRUE(config(q2).expert_weights_norm);
}

TEST(ArchLoader, AnExpertCountThatDisagreesWithTheTensorsIsOneError) {
  MiniFile m("qwen3moe", kExpert);
  m.key("expert_count", GgufValue::make_u32(8));
  EXPECT_EQ(m.load_error(),
            "mini.gguf: tensor 'blk.0.ffn_gate_inp.weight' has shape [8, 4], expected [8, 8] for "
            "this architecture");
}

TEST(ArchLoader, ARouterWithoutExpertsOrExpertsWithoutARouterIsOneError) {
  MiniFile no_experts("qwen3moe", kExpert);
  no_experts.drop({"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight",
                   "blk.0.ffn_down_exps.weight"});
  EXPECT_EQ(no_experts.load_error(),
            "mini.gguf: missing tensor 'blk.0.ffn_gate_exps.weight': a router "
            "('blk.0.ffn_gate_inp.weight') without its experts");
  MiniFile no_router("llama", kExpert);
  no_router.drop({"blk.0.ffn_gate_inp.weight"});
  EXPECT_EQ(no_router.load_error(),
            "mini.gguf: missing tensor 'blk.0.ffn_gate_inp.weight' (the router of the layer's 4 "
            "experts)");
  // A router and experts in a qwen3moe file that declares no experts.
  MiniFile undeclared("qwen3moe", kExpert);
  undeclared.drop({});
  auto f = io::GgufFile::from_bytes(undeclared.w.to_bytes(), "mini.gguf");
  ASSERT_TRUE(f.ok());
  io::GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata()) {
    if (k != "qwen3moe.expert_count" && k != "qwen3moe.expert_used_count") w.set(k, v);
  }
  for (const auto& t : (*f)->tensors()) {
    w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  undeclared.w = w;
  EXPECT_EQ(undeclared.load_error(),
            "mini.gguf: qwen3moe.expert_count is 0 or absent, but architecture 'qwen3moe' is a "
            "mixture of experts");
}

TEST(ArchLoader, TopKLargerThanTheExpertCountIsOneError) {
  MiniFile m("qwen3moe", kExpert);
  m.key("expert_used_count", GgufValue::make_u32(kExpert + 1));
  EXPECT_EQ(m.load_error(),
            "mini.gguf: qwen3moe.expert_used_count 5 must be between 1 and "
            "qwen3moe.expert_count 4");
  MiniFile none("llama", kExpert);
  none.key("expert_used_count", GgufValue::make_u32(0));
  EXPECT_EQ(none.load_error(),
            "mini.gguf: llama.expert_used_count 0 must be between 1 and llama.expert_count 4");
}

TEST(ArchLoader, ASharedExpertGateWithoutTheSharedExpertIsOneError) {
  MiniFile m("qwen2moe", kExpert);
  m.drop({"blk.0.ffn_gate_shexp.weight", "blk.0.ffn_up_shexp.weight",
          "blk.0.ffn_down_shexp.weight"});
  EXPECT_EQ(m.load_error(),
            "mini.gguf: missing tensor 'blk.0.ffn_gate_shexp.weight': a shared-expert gate "
            "('blk.0.ffn_gate_inp_shexp.weight') without the shared expert");
  // Shared-expert tensors in a family without one are unread: refused by name.
  MiniFile q3("qwen3moe", kExpert);
  q3.tensor("blk.0.ffn_gate_inp_shexp.weight", {kEmbd});
  EXPECT_NE(q3.load_error().find("tensor 'blk.0.ffn_gate_inp_shexp.weight' is not used"),
            std::string::npos);
  // An expert gating function other than softmax.
  MiniFile sig("qwen3moe", kExpert);
  sig.key("expert_gating_func", GgufValue::make_u32(2));
  EXPECT_EQ(sig.load_error(),
            "mini.gguf: qwen3moe.expert_gating_func 2 is not implemented (only 1, softmax)");
}

TEST(ArchLoader, RopeScalingOtherThanLinearIsRefused) {
  for (const char* type : {"yarn", "longrope", "su", "llama3"}) {
    MiniFile m("qwen3");
    m.key("rope.scaling.type", GgufValue::make_str(type));
    m.key("rope.scaling.factor", GgufValue::make_f32(4.f));
    EXPECT_EQ(m.load_error(),
              fmt::format("mini.gguf: unsupported qwen3.rope.scaling.type '{}' (supported: none, "
                          "linear)",
                          type));
  }
  // Linear is implemented, but a yarn parameter beside it is not.
  MiniFile m("llama");
  m.key("rope.scaling.type", GgufValue::make_str("linear"));
  m.key("rope.scaling.factor", GgufValue::make_f32(4.f));
  EXPECT_EQ(m.load_error(), "");
  m.key("rope.scaling.attn_factor", GgufValue::make_f32(1.2f));
  EXPECT_NE(m.load_error().find("'llama.rope.scaling.attn_factor' is not implemented"),
            std::string::npos);
}

TEST(ArchLoader, Llama3FrequencyFactorsAreRead) {
  MiniFile m("llama");
  m.tensor("rope_freqs.weight", {kHeadDim / 2});
  ModelWeights w;
  EXPECT_EQ(m.load_error(&w), "");
  EXPECT_EQ(w.rope_freqs.size(), static_cast<size_t>(kHeadDim / 2));
  MiniFile bad("llama");
  bad.tensor("rope_freqs.weight", {kHeadDim});
  EXPECT_EQ(bad.load_error(),
            "mini.gguf: tensor 'rope_freqs.weight' has shape [4], expected [2] for this "
            "architecture");
}

TEST(ArchLoader, Phi3SplitsItsFusedMatricesIntoRowRanges) {
  MiniFile m("phi3");
  ModelWeights w;
  ASSERT_EQ(m.load_error(&w), "");
  const LayerWeights& l = w.layers[0];
  const uint64_t row = kEmbd * 4;
  EXPECT_EQ(l.wk.data, l.wq.data + kHead * kHeadDim * row);
  EXPECT_EQ(l.wv.data, l.wk.data + kHeadKv * kHeadDim * row);
  EXPECT_EQ(l.wv.n_out, kHeadKv * kHeadDim);
  EXPECT_EQ(l.w_up.data, l.w_gate.data + kFf * row);
  EXPECT_EQ(l.w_up.n_out, kFf);
}

TEST(ArchLoader, Phi3LongRopeAndShortSlidingWindowsAreRefused) {
  MiniFile swa("phi3");
  swa.key("attention.sliding_window", GgufValue::make_u32(64));  // Phi-3-mini-4k: 2047 < 4096
  EXPECT_EQ(swa.load_error(),
            "mini.gguf: phi3.attention.sliding_window 64 is shorter than context_length 128: "
            "sliding-window attention is not implemented");
  MiniFile wide("phi3");
  wide.key("attention.sliding_window", GgufValue::make_u32(256));  // never applies
  EXPECT_EQ(wide.load_error(), "");
  MiniFile longrope("phi3");  // Phi-3-128k, Phi-3.5, Phi-4-mini
  longrope.key("rope.scaling.attn_factor", GgufValue::make_f32(1.19f));
  longrope.tensor("rope_factors_long.weight", {kHeadDim / 2});
  longrope.tensor("rope_factors_short.weight", {kHeadDim / 2});
  EXPECT_NE(longrope.load_error().find("'phi3.rope.scaling.attn_factor' is not implemented"),
            std::string::npos);
  MiniFile factors("phi3");
  factors.tensor("rope_factors_long.weight", {kHeadDim / 2});
  EXPECT_NE(factors.load_error().find("tensor 'rope_factors_long.weight' is not used"),
            std::string::npos);
}

Result<ModelConfig> config_of(MiniFile& m) {
  auto f = io::GgufFile::from_bytes(m.w.to_bytes(), "mini.gguf");
  if (!f.ok()) return make_error("{}", f.message());
  return load_config(**f);
}

TEST(ArchLoader, GemmaWindowsSoftCapsAndScales) {
  MiniFile g2("gemma2");
  g2.key("block_count", GgufValue::make_u32(4));
  auto c2 = config_of(g2);
  ASSERT_TRUE(c2.ok()) << c2.message();
  EXPECT_EQ(c2->layer_window, (std::vector<int>{64, 0, 64, 0}));  // pattern 2
  EXPECT_EQ(c2->attn_softcap, 50.f);
  EXPECT_EQ(c2->final_softcap, 30.f);
  EXPECT_EQ(c2->attn_scale, 1.f / std::sqrt(static_cast<float>(kHeadDim)));
  EXPECT_EQ(c2->embd_scale, std::sqrt(static_cast<float>(kEmbd)));
  EXPECT_EQ(c2->rope_window.freq_base, 10000.f);  // as the global layers
  EXPECT_EQ(c2->rope.mode, kernels::RopeMode::kNeox);
  EXPECT_EQ(c2->ffn_act, FfnAct::kGeluTanh);

  MiniFile g3("gemma3");
  g3.key("block_count", GgufValue::make_u32(7));
  g3.key("rope.freq_base", GgufValue::make_f32(1e6f));
  g3.key("rope.scaling.type", GgufValue::make_str("linear"));
  g3.key("rope.scaling.factor", GgufValue::make_f32(8.f));
  auto c3 = config_of(g3);
  ASSERT_TRUE(c3.ok()) << c3.message();
  EXPECT_EQ(c3->layer_window, (std::vector<int>{64, 64, 64, 64, 64, 0, 64}));  // pattern 6
  EXPECT_EQ(c3->attn_softcap, 0.f);
  EXPECT_EQ(c3->final_softcap, 0.f);
  EXPECT_EQ(c3->rope.freq_base, 1e6f);
  EXPECT_EQ(c3->rope.freq_scale, 1.f / 8);
  EXPECT_EQ(c3->rope_window.freq_base, 10000.f);  // window layers: their own base, no scaling
  EXPECT_EQ(c3->rope_window.freq_scale, 1.f);
  g3.key("rope.freq_base_swa", GgufValue::make_f32(20000.f));
  g3.key("attention.sliding_window_pattern", GgufValue::make_u32(2));
  c3 = config_of(g3);
  ASSERT_TRUE(c3.ok()) << c3.message();
  EXPECT_EQ(c3->rope_window.freq_base, 20000.f);
  EXPECT_EQ(c3->layer_window, (std::vector<int>{64, 0, 64, 0, 64, 0, 64}));

  // Without a sliding window key Gemma 3 has none; Gemma 2 defaults to 4096 as llama.cpp does.
  MiniFile none("gemma3");
  none.w.set("gemma3.attention.sliding_window", GgufValue::make_u32(0));
  auto cn = config_of(none);
  ASSERT_TRUE(cn.ok()) << cn.message();
  EXPECT_TRUE(cn->layer_window.empty());

  // The 27B models scale queries by 1/sqrt(n_embd / n_head) (gemma_pytorch's
  // query_pre_attn_scalar), recognised by their layer count as llama.cpp does.
  MiniFile g27("gemma3");
  g27.key("block_count", GgufValue::make_u32(62));
  auto c27 = config_of(g27);
  ASSERT_TRUE(c27.ok()) << c27.message();
  EXPECT_EQ(c27->attn_scale, 1.f / std::sqrt(static_cast<float>(kEmbd / kHead)));
}

TEST(ArchLoader, GemmaRefusesWhatItDoesNotImplement) {
  MiniFile g3("gemma3");  // Gemma 3 has no attention soft-capping: a file with it is not Gemma 3
  g3.key("attn_logit_softcapping", GgufValue::make_f32(50.f));
  EXPECT_NE(g3.load_error().find("'gemma3.attn_logit_softcapping' is not implemented"),
            std::string::npos);
  MiniFile bad_cap("gemma2");
  bad_cap.key("final_logit_softcapping", GgufValue::make_f32(0.f));
  EXPECT_EQ(bad_cap.load_error(), "mini.gguf: gemma2.final_logit_softcapping 0 must be positive");
  MiniFile bad_window("gemma2");
  bad_window.key("attention.sliding_window", GgufValue::make_u32(1));
  EXPECT_EQ(bad_window.load_error(), "mini.gguf: gemma2.attention.sliding_window 1 is out of range");
  MiniFile no_post("gemma2");
  no_post.tensor("blk.0.attn_q_norm.weight", {kHeadDim});  // gemma3's, in a gemma2 file
  EXPECT_NE(no_post.load_error().find("tensor 'blk.0.attn_q_norm.weight' is not used"),
            std::string::npos);
}

}  // namespace
}  // namespace tova::model

namespace tova::model {
namespace {

TEST(ArchLoader, GptOssReadsSinksBiasesWindowsAndYarn) {
  MiniFile g("gpt-oss", kExpert);
  g.key("block_count", GgufValue::make_u32(1));
  ModelWeights w;
  ASSERT_EQ(g.load_error(&w), "");
  EXPECT_EQ(w.tensors_read.size(), 21u);  // tied output here
  const LayerWeights& L = w.layers[0];
  EXPECT_EQ(L.attn_sinks.size(), static_cast<size_t>(kHead));
  EXPECT_EQ(L.bo.size(), static_cast<size_t>(kEmbd));
  EXPECT_EQ(L.bq.size(), static_cast<size_t>(kHead * kHeadDim));
  EXPECT_EQ(L.ffn_kind, FfnKind::kMoe);
  EXPECT_EQ(L.moe.router_b.size(), static_cast<size_t>(kExpert));
  EXPECT_EQ(L.moe.gate_b.size(), static_cast<size_t>(kExpert * kFfExp));
  EXPECT_EQ(L.moe.up_b.size(), static_cast<size_t>(kExpert * kFfExp));
  EXPECT_EQ(L.moe.down_b.size(), static_cast<size_t>(kExpert * kEmbd));

  MiniFile four("gpt-oss", kExpert);
  four.key("block_count", GgufValue::make_u32(4));
  for (int il = 1; il < 4; ++il) {  // the other layers' tensors: copy layer 0's names
    auto f = io::GgufFile::from_bytes(four.w.to_bytes(), "mini.gguf");
    ASSERT_TRUE(f.ok());
    for (const auto& t : (*f)->tensors()) {
      if (!t.name.starts_with("blk.0.")) continue;
      four.w.add_tensor("blk." + std::to_string(il) + t.name.substr(5), t.type, t.dims,
                        std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
  }
  auto c = config_of(four);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->layer_window, (std::vector<int>{128, 0, 128, 0}));  // even layers windowed
  EXPECT_EQ(c->ffn_act, FfnAct::kSwigluOai);
  EXPECT_EQ(c->moe_gating, MoeGating::kSoftmaxOfChosen);
  EXPECT_FALSE(c->expert_weights_norm);
  EXPECT_EQ(c->attn_scale, 1.f / std::sqrt(static_cast<float>(kHeadDim)));
  EXPECT_EQ(c->rope.mode, kernels::RopeMode::kNeox);
  EXPECT_EQ(c->rope.freq_scale, 1.f / 32);
  EXPECT_EQ(c->rope.yarn_ext_factor, 1.f);
  EXPECT_EQ(c->rope.yarn_n_ctx_orig, 4096);
  EXPECT_NEAR(c->rope.mscale, 1 + 0.1 * std::log(32.0), 1e-6);
  EXPECT_EQ(c->rope_window.mscale, c->rope.mscale);  // the window layers scale the same way
  EXPECT_EQ(c->rope_window.freq_base, c->rope.freq_base);
  EXPECT_EQ(c->n_ff_exp, kFfExp);
}

TEST(ArchLoader, GptOssRefusesWhatItDoesNotImplement) {
  // The window key is required and must be > 0.
  MiniFile no_window("gpt-oss", kExpert);
  auto f = io::GgufFile::from_bytes(no_window.w.to_bytes(), "mini.gguf");
  ASSERT_TRUE(f.ok());
  io::GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata()) {
    if (k != "gpt-oss.attention.sliding_window") w.set(k, v);
  }
  for (const auto& t : (*f)->tensors()) {
    w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  no_window.w = w;
  EXPECT_NE(no_window.load_error().find("gpt-oss.attention.sliding_window"), std::string::npos)
      << no_window.load_error();
  MiniFile zero_window("gpt-oss", kExpert);
  zero_window.key("attention.sliding_window", GgufValue::make_u32(0));
  EXPECT_EQ(zero_window.load_error(),
            "mini.gguf: gpt-oss.attention.sliding_window 0 is out of range (gpt-oss's window "
            "layers need a window > 0)");
  // A sinks tensor of the wrong size: one line naming it.
  MiniFile sinks("gpt-oss", kExpert);
  sinks.drop({"blk.0.attn_sinks.weight"});
  sinks.tensor("blk.0.attn_sinks.weight", {kHead + 1});
  EXPECT_EQ(sinks.load_error(),
            "mini.gguf: tensor 'blk.0.attn_sinks.weight' has shape [3], expected [2] for this "
            "architecture");
  // YaRN parameters the converter copies from the Hugging Face config: llama.cpp computes with
  // beta_fast 32 and beta_slow 1 whatever they say, so those values are accepted, others refused.
  MiniFile beta("gpt-oss", kExpert);
  beta.key("rope.scaling.yarn_beta_fast", GgufValue::make_f32(32.f));
  beta.key("rope.scaling.yarn_beta_slow", GgufValue::make_f32(1.f));
  EXPECT_EQ(beta.load_error(), "");
  beta.key("rope.scaling.yarn_beta_fast", GgufValue::make_f32(16.f));
  EXPECT_EQ(beta.load_error(),
            "mini.gguf: gpt-oss.rope.scaling.yarn_beta_fast 16 is not implemented (llama.cpp "
            "computes this family with 32)");
  MiniFile log_mul("gpt-oss", kExpert);
  log_mul.key("rope.scaling.yarn_log_multiplier", GgufValue::make_f32(0.1f));
  EXPECT_NE(log_mul.load_error().find("'gpt-oss.rope.scaling.yarn_log_multiplier' is not "
                                      "implemented"),
            std::string::npos);
  MiniFile scale("gpt-oss", kExpert);
  scale.key("expert_weights_scale", GgufValue::make_f32(2.f));
  EXPECT_NE(scale.load_error().find("'gpt-oss.expert_weights_scale' is not implemented"),
            std::string::npos);
  // Without its router bias the layer is not gpt-oss's.
  MiniFile no_bias("gpt-oss", kExpert);
  no_bias.drop({"blk.0.ffn_gate_inp.bias"});
  EXPECT_EQ(no_bias.load_error(), "mini.gguf: missing tensor 'blk.0.ffn_gate_inp.bias'");
  // An MXFP4 expert tensor whose rows are not whole blocks of 32: one line from the reader
  // (written with rows of 32, then its first dimension patched to 48 in the header).
  MiniFile mx("gpt-oss", kExpert);
  const std::string up = "blk.0.ffn_up_exps.weight";
  mx.drop({up});
  mx.w.add_tensor(up, GgmlType::kMXFP4, {32, kFfExp, kExpert},
                  std::vector<uint8_t>(static_cast<size_t>(17) * kFfExp * kExpert, 0));
  std::vector<uint8_t> bytes = mx.w.to_bytes();
  const auto at = std::search(bytes.begin(), bytes.end(), up.begin(), up.end());
  ASSERT_NE(at, bytes.end());
  const int64_t bad_row = 48;
  std::memcpy(&*(at + static_cast<int64_t>(up.size()) + 4), &bad_row, sizeof(bad_row));
  auto bad = io::GgufFile::from_bytes(bytes, "mini.gguf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message().find('\n'), std::string::npos);
  EXPECT_NE(bad.message().find("row length 48"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("the mxfp4 block size 32"), std::string::npos) << bad.message();
  // Other families still refuse yarn.
  MiniFile q("qwen3");
  q.key("rope.scaling.type", GgufValue::make_str("yarn"));
  EXPECT_NE(q.load_error().find("(supported: none, linear)"), std::string::npos);
}

}  // namespace
}  // namespace tova::model
