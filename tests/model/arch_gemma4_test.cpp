// Gemma 4 (tests/data/arch/gemma4-f32.gguf: five window layers of head size 16 with 2 KV heads,
// one global layer of head size 32 with 1 KV head and K = V): the layers' own shapes reach the
// multi-state, window layers stay within their window under every policy, and a file whose layer
// pattern disagrees with its tensors, or whose E-model keys disagree with them, is refused with
// one line. The E variant: arch_gemma4e_test.cpp. Logits and greedy tokens against llama.cpp: arch_golden_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io/gguf.h"
#include "model_test_util.h"
#include "runtime/session_file.h"

namespace tova::testing {
namespace {

std::string arch_path(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + file;
}

TEST(ArchGemma4, LayersHaveTheirOwnShapes) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(arch_path("gemma4-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.layer_window, (std::vector<int>{16, 16, 16, 16, 16, 0}));
  EXPECT_EQ(c.layer_head_dim, (std::vector<int>{16, 16, 16, 16, 16, 32}));
  EXPECT_EQ(c.layer_n_head_kv, (std::vector<int>{2, 2, 2, 2, 2, 1}));
  EXPECT_EQ(c.attn_scale, 1.f);
  for (int il = 0; il < 5; ++il) EXPECT_FALSE((*m)->weights().layers[il].v_is_k) << il;
  EXPECT_TRUE((*m)->weights().layers[5].v_is_k);
  // The global layer's proportional RoPE: 4 of its 16 pairs rotate.
  const auto& f = (*m)->weights().rope_freqs;
  ASSERT_EQ(f.size(), 16u);
  EXPECT_EQ(f[3], 1.f);
  EXPECT_EQ(f[4], 1e30f);
  EXPECT_EQ(c.rope.n_rot, 32);
  EXPECT_EQ(c.rope_window.n_rot, 16);
}

// Each layer's pool has its layer's shape; the window layers keep at most min(k, 15) states
// (15 under `full`) inside the window, the global layer its budget; the bytes follow the shapes.
TEST(ArchGemma4, WindowLayersBoundedGlobalLayerByTheBudget) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(arch_path("gemma4-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(64);
  ThreadPool pool(2);
  for (const auto& [policy, k] : {std::pair<const char*, int>{"full", 0}, {"tova", 8},
                                  {"tova", 32}, {"h2o", 24}, {"sink:4", 12}, {"window", 20}}) {
    std::unique_ptr<kv::MultiState> st;
    const auto logits = all_logits(**m, ids, cache_options(policy, k), 16, pool, &st);
    for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << policy;
    for (int il = 0; il < 6; ++il) {
      const kv::LayerState& L = st->layer(il);
      EXPECT_EQ(L.head_dim(), il < 5 ? 16 : 32) << il;
      EXPECT_EQ(L.n_head_kv(), il < 5 ? 2 : 1) << il;
      if (il < 5) {
        EXPECT_EQ(L.n_held(), k > 0 ? std::min(k, 15) : 15) << policy << " layer " << il;
        for (int s = 0; s < L.n_slot() * L.n_head_kv(); ++s) {
          if (L.pos()[s] >= 0) {
            EXPECT_GE(L.pos()[s], 64 - 16 + 1) << policy << " layer " << il;
          }
        }
      } else {
        EXPECT_EQ(L.n_held(), k > 0 ? std::min(k, 64) : 64) << policy;
      }
      EXPECT_EQ(L.bytes(), uint64_t(L.n_head_kv()) * L.n_slot() *
                               (2 * L.head_dim() * sizeof(float) + sizeof(int64_t)))
          << il;
    }
  }
}

// `window` and `sink:4` at k = 32 against llama.cpp's cache dropping the same positions after
// every token (its window layers also mask inside its SWA cache): relative L2 within issue 34's
// 2e-3 for Gemma 4 (llama.cpp's F16-table GELU, arch_golden_test.cpp), argmax at >= 90%.
TEST(ArchGemma4, WindowAndSinkMatchLlamaCppDroppingTheSamePositions) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(arch_path("gemma4-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  const auto full_cpp = read_f32(arch_path("gemma4-f32.logits.f32"));
  ThreadPool pool(2);
  for (const auto& [policy, file] : {std::pair<const char*, const char*>{"window", "window-32"},
                                     {"sink:4", "sink4-32"}}) {
    const auto cpp = read_f32(arch_path(std::string("gemma4-f32.") + file + ".logits.f32"));
    ASSERT_EQ(cpp.size(), ids.size() * n_vocab);
    double moved = 0;  // the golden is not `full` in disguise
    for (size_t i = 40 * n_vocab; i < cpp.size(); ++i) {
      moved = std::max(moved, std::fabs(double(cpp[i]) - full_cpp[i]));
    }
    EXPECT_GT(moved, 0.05) << policy;
    const auto mine = all_logits(**m, ids, cache_options(policy, 32), 16, pool);
    double num = 0, den = 0;
    int agree = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      num += (double(mine[i]) - cpp[i]) * (double(mine[i]) - cpp[i]);
      den += double(cpp[i]) * cpp[i];
    }
    for (size_t p = 0; p < ids.size(); ++p) {
      agree += argmax_row(&mine[p * n_vocab], n_vocab) == argmax_row(&cpp[p * n_vocab], n_vocab);
    }
    EXPECT_LT(std::sqrt(num / den), 2e-3) << policy;
    EXPECT_GE(agree, at_least_percent(ids.size(), 90)) << policy;
  }
}

// A session file keeps each layer in its own shape: saved and loaded, continuing gives the same
// logits as continuing the original (window layers of head size 16, the global one of 32).
TEST(ArchGemma4, SessionFileRoundTripsLayersOfTheirOwnShape) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(arch_path("gemma4-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(40);
  ThreadPool pool(2);
  std::unique_ptr<kv::MultiState> st;
  all_logits(**m, ids, cache_options("tova", 24), 8, pool, &st);
  runtime::SessionData d;
  d.state = st->clone();
  auto back = runtime::decode_session_bytes(**m, runtime::encode_session(**m, d));
  ASSERT_TRUE(back.ok()) << back.message();
  const int n_vocab = (*m)->config().n_vocab;
  std::vector<float> a(n_vocab), b(n_vocab);
  model::ForwardScratch s1, s2;
  const model::BatchToken t1{.token = ids[5], .state = st.get(), .logits = true};
  const model::BatchToken t2{.token = ids[5], .state = back->state.get(), .logits = true};
  ASSERT_TRUE((*m)->forward({&t1, 1}, pool, s1, a.data()).ok());
  ASSERT_TRUE((*m)->forward({&t2, 1}, pool, s2, b.data()).ok());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  for (int il = 0; il < 6; ++il) {
    EXPECT_EQ(back->state->layer(il).head_dim(), il < 5 ? 16 : 32);
  }
}

// The fixture with one metadata key replaced.
std::unique_ptr<io::GgufFile> with_key(const std::string& key, io::GgufValue value) {
  auto f = io::GgufFile::open(arch_path("gemma4-f32.gguf"));
  EXPECT_TRUE(f.ok()) << f.message();
  io::GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata()) w.set(k, v);
  w.set(key, std::move(value));
  for (const io::GgufTensorInfo& t : (*f)->tensors()) {
    w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  auto g = io::GgufFile::from_bytes(w.to_bytes(), "gemma4-edited.gguf");
  EXPECT_TRUE(g.ok()) << g.message();
  return std::move(g).value();
}

std::string load_error(std::unique_ptr<io::GgufFile> f) {
  auto m = model::Model::from_file(std::move(f));
  return m.ok() ? "" : m.message();
}

TEST(ArchGemma4, LayerPatternThatDisagreesWithTheTensorsIsRefused) {
  TOVA_REQUIRE_SHARED();
  // Layer 5 (global: head size 32, 1 KV head, no attn_v) called a window layer.
  std::vector<io::GgufValue> all_swa(6, io::GgufValue::make_bool(true));
  const std::string e = load_error(with_key(
      "gemma4.attention.sliding_window_pattern",
      io::GgufValue::make_array(io::GgufValueType::kBool, std::move(all_swa))));
  EXPECT_NE(e.find("blk.5.attn_q.weight"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // A pattern of the wrong length.
  std::vector<io::GgufValue> short_pattern(5, io::GgufValue::make_bool(true));
  const std::string e2 = load_error(with_key(
      "gemma4.attention.sliding_window_pattern",
      io::GgufValue::make_array(io::GgufValueType::kBool, std::move(short_pattern))));
  EXPECT_NE(e2.find("must be an array of 6 entries"), std::string::npos) << e2;
  // KV heads per layer that disagree with the tensors.
  const std::string e3 = load_error(with_key("gemma4.attention.head_count_kv",
                                             io::GgufValue::make_i32_array({2, 2, 2, 2, 2, 2})));
  EXPECT_NE(e3.find("blk.5.attn_k.weight"), std::string::npos) << e3;
}

// The E-model keys on the dense fixture: sharing that llama.cpp would wire otherwise, and
// per-layer inputs without their tensors, are refused in one line.
TEST(ArchGemma4, EModelKeysThatDisagreeWithTheFileAreRefused) {
  TOVA_REQUIRE_SHARED();
  const std::string e = load_error(
      with_key("gemma4.attention.shared_kv_layers", io::GgufValue::make_u32(2)));
  EXPECT_NE(e.find("gemma4.attention.shared_kv_layers 2"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  const std::string e2 = load_error(
      with_key("gemma4.embedding_length_per_layer_input", io::GgufValue::make_u32(8)));
  EXPECT_NE(e2.find("missing tensor 'per_layer_token_embd.weight'"), std::string::npos) << e2;
}

}  // namespace
}  // namespace tova::testing
