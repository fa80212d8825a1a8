// The qwen3next family (Qwen3-Next: Qwen3.5's hybrid with grouped value heads, fused ssm_ba and,
// in older files, ssm_in) on its fixtures (tests/data/arch): which key head a value head reads
// in either order, the fused ssm_in computing what the split attn_qkv + attn_gate compute, and
// bad files each one error naming the key or tensor at fault. What every Gated DeltaNet hybrid
// shares (prompt at once equals token by token, policies bound only the attention layers,
// clone, followers, session files) runs for qwen3next in qwen35_test.cpp; its goldens in
// arch_golden_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/model_test_util.h"
#include "model/weights.h"

namespace tova::testing {
namespace {

std::string next_fixture(const std::string& name) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + name + "-f32.gguf";
}

// 2 key heads, 6 value heads (r = 3), by hand: tiled h mod 2, grouped h / 3.
TEST(Qwen3Next, AValueHeadReadsItsKeyHeadInEitherOrder) {
  model::DeltaNetConfig d{.n_k_head = 2, .n_v_head = 6, .head_dim = 4};
  const int tiled[] = {0, 1, 0, 1, 0, 1}, grouped[] = {0, 0, 0, 1, 1, 1};
  for (int h = 0; h < 6; ++h) EXPECT_EQ(d.k_head(h), tiled[h]) << h;
  d.heads = model::DeltaNetHeads::kGrouped;
  for (int h = 0; h < 6; ++h) EXPECT_EQ(d.k_head(h), grouped[h]) << h;
}

TEST(Qwen3Next, TheFixtureIsGroupedWithFusedBetaAlpha) {
  auto m = model::Model::load(next_fixture("qwen3next"));
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.deltanet.heads, model::DeltaNetHeads::kGrouped);
  EXPECT_EQ(c.rope.mode, kernels::RopeMode::kNeox);
  EXPECT_EQ(c.rope.n_rot, 8);
  const model::DeltaNetWeights& w = (*m)->weights().layers[0].deltanet;
  EXPECT_EQ(w.ba.n_out, 2 * c.deltanet.n_v_head);
  EXPECT_EQ(w.beta.n_out, 0);
  EXPECT_EQ(w.qkv.n_out, c.deltanet.conv_dim());
  EXPECT_EQ(w.qkvz.n_out, 0);
}

// The fixture rewritten: tensors dropped or replaced, keys set (u32, bool or f32 array).
struct NextRewrite {
  std::string fixture = "qwen3next";
  std::vector<std::string> drop;
  std::vector<std::pair<std::string, io::GgufValue>> keys;
  std::vector<std::string> drop_keys;
  // ssm_in of every layer split into attn_qkv (all q, all k, all v) and attn_gate, as
  // llama.cpp's converter now writes it.
  bool split_in = false;
  std::string widen;     // this tensor's rows doubled (a fused width the heads disagree with)
  std::string add_copy;  // a copy of `add_from` under this name
  std::string add_from;
};

// rows [kh][q S | k S | v rS | z rS] of ssm_in (F32) into qkv [q all | k all | v all] and z.
void split_ssm_in(const io::GgufTensorInfo& t, int n_k, int n_v, int S, io::GgufWriter& out,
                  const std::string& prefix) {
  const int64_t n_in = t.dims[0], r = n_v / n_k, group = 2 * S + 2 * r * S;
  const auto* rows = reinterpret_cast<const float*>(t.data);
  std::vector<float> q, k, v, z;
  for (int kh = 0; kh < n_k; ++kh) {
    const float* g = rows + kh * group * n_in;
    q.insert(q.end(), g, g + S * n_in);
    k.insert(k.end(), g + S * n_in, g + 2 * S * n_in);
    v.insert(v.end(), g + 2 * S * n_in, g + (2 * S + r * S) * n_in);
    z.insert(z.end(), g + (2 * S + r * S) * n_in, g + group * n_in);
  }
  std::vector<float> qkv = q;
  qkv.insert(qkv.end(), k.begin(), k.end());
  qkv.insert(qkv.end(), v.begin(), v.end());
  auto bytes = [](const std::vector<float>& f) {
    const auto* p = reinterpret_cast<const uint8_t*>(f.data());
    return std::vector<uint8_t>(p, p + f.size() * sizeof(float));
  };
  out.add_tensor(prefix + "attn_qkv.weight", t.type,
                 {n_in, static_cast<int64_t>(qkv.size()) / n_in}, bytes(qkv));
  out.add_tensor(prefix + "attn_gate.weight", t.type, {n_in, static_cast<int64_t>(z.size()) / n_in},
                 bytes(z));
}

Result<std::unique_ptr<model::Model>> load_rewritten(const NextRewrite& r) {
  TOVA_ASSIGN_OR_RETURN(auto f,
                        io::GgufFile::open(next_fixture(r.fixture), io::GgufFile::Load::kRead));
  io::GgufWriter out;
  for (const auto& [k, v] : f->metadata()) {
    if (std::find(r.drop_keys.begin(), r.drop_keys.end(), k) == r.drop_keys.end()) out.set(k, v);
  }
  for (const auto& [k, v] : r.keys) out.set(k, v);
  for (const auto& t : f->tensors()) {
    if (std::find(r.drop.begin(), r.drop.end(), t.name) != r.drop.end()) continue;
    if (r.split_in && t.name.ends_with(".ssm_in.weight")) {
      split_ssm_in(t, 2, 4, 16, out, t.name.substr(0, t.name.size() - 13));
      continue;
    }
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    std::vector<int64_t> dims = t.dims;
    if (t.name == r.widen) {
      data.insert(data.end(), t.data, t.data + t.n_bytes);
      dims[1] *= 2;
    }
    out.add_tensor(t.name, t.type, dims, std::move(data));
    if (t.name == r.add_from) {
      out.add_tensor(r.add_copy, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
  }
  TOVA_ASSIGN_OR_RETURN(auto g, io::GgufFile::from_bytes(out.to_bytes(), "next.gguf"));
  return model::Model::from_file(std::move(g));
}

std::string load_error(const NextRewrite& r) {
  auto m = load_rewritten(r);
  return m.ok() ? "" : m.message();
}

// Older files' fused ssm_in gathered per key head computes what the split tensors the converter
// writes now compute, bit for bit (the same rows, the same products).
TEST(Qwen3Next, FusedSsmInEqualsTheSplitProjections) {
  auto fused = model::Model::load(next_fixture("qwen3next-ssm_in"));
  auto split = load_rewritten({.fixture = "qwen3next-ssm_in", .split_in = true});
  ASSERT_TRUE(fused.ok()) << fused.message();
  ASSERT_TRUE(split.ok()) << split.message();
  EXPECT_GT((*fused)->weights().layers[0].deltanet.qkvz.n_out, 0);
  EXPECT_EQ((*split)->weights().layers[0].deltanet.qkvz.n_out, 0);
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(1 + (i * 37) % 500);
  ThreadPool pool(2);
  // A prompt in chunks of 6 (the chunked delta rule) and its last tokens one at a time.
  const auto a = all_logits(**fused, ids, cache_options("full", 0), 6, pool);
  const auto b = all_logits(**split, ids, cache_options("full", 0), 6, pool);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

// Bad files, one line each naming the key or tensor at fault.
TEST(Qwen3Next, BadFilesAreOneErrorNamingTheCulprit) {
  struct Case {
    NextRewrite r;
    std::string want;
  };
  const auto u32 = [](uint32_t v) { return io::GgufValue::make_u32(v); };
  const std::vector<Case> cases = {
      // A fused beta/alpha projection whose width disagrees with the value heads.
      {{.widen = "blk.0.ssm_ba.weight"}, "blk.0.ssm_ba.weight"},
      // ssm_in's width disagreeing with the head counts.
      {{.fixture = "qwen3next-ssm_in", .widen = "blk.1.ssm_in.weight"}, "blk.1.ssm_in.weight"},
      // 3 key heads cannot share 4 value heads.
      {{.keys = {{"qwen3next.ssm.group_count", u32(3)}}},
       "qwen3next.ssm.time_step_rank 4 (value heads) is not a multiple of "
       "qwen3next.ssm.group_count 3"},
      // Both forms of the input projection in one layer.
      {{.fixture = "qwen3next-ssm_in",
        .add_copy = "blk.0.attn_qkv.weight",
        .add_from = "blk.0.ssm_conv1d.weight"},
       "carries both 'blk.0.ssm_in.weight'"},
      // Qwen3.5's split beta/alpha in place of ssm_ba: llama.cpp's qwen3next reads ssm_ba.
      {{.drop = {"blk.0.ssm_ba.weight"},
        .add_copy = "blk.0.ssm_beta.weight",
        .add_from = "blk.0.ssm_dt.bias"},
       "blk.0.ssm_ba.weight"},
      // Qwen3.5's M-RoPE sections: qwen3next's RoPE is plain NeoX, the key is refused.
      {{.keys = {{"qwen3next.rope.dimension_sections",
                  io::GgufValue::make_i32_array({2, 1, 1, 0})}}},
       "qwen3next.rope.dimension_sections"},
      // llama.cpp always renormalizes the chosen experts and reads no weight scale.
      {{.keys = {{"qwen3next.expert_weights_norm", io::GgufValue::make_bool(false)}}},
       "qwen3next.expert_weights_norm false is not implemented"},
      {{.keys = {{"qwen3next.expert_weights_scale", io::GgufValue::make_f32(2.5f)}}},
       "qwen3next.expert_weights_scale 2.5 is not implemented"},
  };
  for (const Case& k : cases) {
    const std::string e = load_error(k.r);
    SCOPED_TRACE(k.want);
    EXPECT_NE(e.find(k.want), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace tova::testing
