// Gemma 4's E variant (tests/data/arch/gemma4e-f32.gguf: nine layers, every third global, the
// last three reusing K/V: layers 6 and 7 the window layer 4's, layer 8 the global layer 5's;
// per-layer inputs of 32 in every layer). Shared-K/V layers hold nothing in the multi-state and
// read their owner's state as the owner held it for each token: under policies that evict (the
// owner's), in batches that would evict between tokens (split token by token), in chunks, in
// clones, session files and followers. Logits and greedy tokens against llama.cpp:
// arch_golden_test.cpp; bounded policies against llama.cpp's cache below.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io/gguf.h"
#include "model_test_util.h"
#include "runtime/session_file.h"

namespace tova::testing {
namespace {

std::string g4e_path(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + file;
}

TEST(ArchGemma4E, SharedLayersReadTheLastLayerOfTheirKindAndHoldNothing) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(g4e_path("gemma4e-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.layer_kv_owner, (std::vector<int>{-1, -1, -1, -1, -1, -1, 4, 4, 5}));
  EXPECT_EQ(c.n_embd_per_layer, 32);
  EXPECT_EQ(c.n_attention_layers(), 6);
  for (int il = 0; il < 9; ++il) {
    EXPECT_EQ((*m)->weights().layers[il].mixer_kind == model::MixerKind::kSharedKv, il >= 6) << il;
    EXPECT_EQ((*m)->weights().layers[il].ple_gate.n_out, 32) << il;
    // E2B's double-wide feed-forward in the shared layers (feed_forward_length per layer).
    EXPECT_EQ((*m)->weights().layers[il].w_gate.n_out, il >= 6 ? c.n_ff : c.n_ff / 2) << il;
    EXPECT_EQ(c.n_ff_of(il), (*m)->weights().layers[il].w_down.n_in) << il;
  }
  auto st = runtime::make_state(**m, cache_options("tova", 8), 0);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ((*st)->n_layer(), 6);
  EXPECT_EQ((*st)->clone()->n_layer(), 6);
  EXPECT_EQ(c.n_shared_kv_layers(), 3);
}

// llama.cpp's cache dropping the same positions after every token (its shared layers read the
// owners' cells): the owner's policy bounds what the shared layers read.
TEST(ArchGemma4E, WindowAndSinkMatchLlamaCppDroppingTheSamePositions) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(g4e_path("gemma4e-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  const auto full_cpp = read_f32(g4e_path("gemma4e-f32.logits.f32"));
  ThreadPool pool(2);
  for (const auto& [policy, file] : {std::pair<const char*, const char*>{"window", "window-32"},
                                     {"sink:4", "sink4-32"}}) {
    const auto cpp = read_f32(g4e_path(std::string("gemma4e-f32.") + file + ".logits.f32"));
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

// A batch whose policy evicts between its tokens is fed token by token: the same bits as
// feeding the tokens one per call, for policies that score (tova, h2o), that do not (window),
// and a mode that moves positions; chunked prefill keeps its chunks whole and stays finite.
// Under `full` the window layers drop at the step's end instead (the batch stays whole past
// the window; kv::MultiStateOptions::window_drops_at_step_end): the same states, each token
// masked by its window, the attention's sums in another slot order: equal to float rounding.
TEST(ArchGemma4E, BatchesThatEvictBetweenTokensEqualOneTokenPerCall) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(g4e_path("gemma4e-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(48);
  ThreadPool pool(2);
  for (const auto& [policy, k] : {std::pair<const char*, int>{"tova", 8}, {"h2o", 12},
                                  {"window", 10}}) {
    const auto batched = all_logits(**m, ids, cache_options(policy, k), 24, pool);
    const auto single = all_logits(**m, ids, cache_options(policy, k), 1, pool);
    ASSERT_EQ(batched.size(), single.size());
    EXPECT_EQ(0, std::memcmp(batched.data(), single.data(), batched.size() * sizeof(float)))
        << policy;
  }
  {
    std::unique_ptr<kv::MultiState> st;
    const auto batched = all_logits(**m, ids, cache_options("full", 0), 24, pool, &st);
    const auto single = all_logits(**m, ids, cache_options("full", 0), 1, pool);
    ASSERT_EQ(batched.size(), single.size());
    float most = 0.f;
    for (size_t i = 0; i < batched.size(); ++i) most = std::max(most, std::abs(batched[i] - single[i]));
    EXPECT_LT(most, 1e-5f);
    int argmax_same = 0;
    for (size_t p = 0; p < ids.size(); ++p) {
      const int n_vocab = (*m)->config().n_vocab;
      argmax_same += argmax_row(&batched[p * n_vocab], n_vocab) ==
                     argmax_row(&single[p * n_vocab], n_vocab);
    }
    EXPECT_EQ(argmax_same, static_cast<int>(ids.size()));
    // Between steps a window layer holds at most window - 1 (15) states; global layers all 48.
    for (int il = 0; il < st->n_layer(); ++il) {
      EXPECT_LE(st->layer(il).n_held(), st->layer(il).window() > 0 ? 15 : 48) << il;
    }
  }
  CacheOptions gap = cache_options("tova", 8);
  gap.positions = kv::PositionMode::kGap;
  const auto batched = all_logits(**m, ids, gap, 24, pool);
  const auto single = all_logits(**m, ids, gap, 1, pool);
  EXPECT_EQ(0, std::memcmp(batched.data(), single.data(), batched.size() * sizeof(float)));
  CacheOptions chunk = cache_options("tova", 16);
  chunk.prefill.chunk = 8;
  std::unique_ptr<kv::MultiState> st;
  for (float x : all_logits(**m, ids, chunk, 8, pool, &st)) ASSERT_TRUE(std::isfinite(x));
  for (int il = 0; il < st->n_layer(); ++il) EXPECT_LE(st->layer(il).n_held(), 16) << il;
}

// clone(), session files and followers: a shared layer has nothing of its own to copy, save or
// mirror, so continuing a copy gives the original's logits bit for bit.
TEST(ArchGemma4E, CloneSessionFileAndFollowersContinueExactly) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(g4e_path("gemma4e-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(40);
  ThreadPool pool(2);
  const int n_vocab = (*m)->config().n_vocab;
  std::unique_ptr<kv::MultiState> st;
  all_logits(**m, ids, cache_options("tova", 12), 8, pool, &st);
  std::unique_ptr<kv::MultiState> copy = st->clone();
  runtime::SessionData d;
  d.state = st->clone();
  auto back = runtime::decode_session_bytes(**m, runtime::encode_session(**m, d));
  ASSERT_TRUE(back.ok()) << back.message();
  model::ForwardScratch s;
  std::vector<float> a(n_vocab), b(n_vocab), c(n_vocab);
  for (int t = 0; t < 8; ++t) {
    const model::BatchToken t1{.token = ids[t], .state = st.get(), .logits = true};
    const model::BatchToken t2{.token = ids[t], .state = copy.get(), .logits = true};
    const model::BatchToken t3{.token = ids[t], .state = back->state.get(), .logits = true};
    ASSERT_TRUE((*m)->forward({&t1, 1}, pool, s, a.data()).ok());
    ASSERT_TRUE((*m)->forward({&t2, 1}, pool, s, b.data()).ok());
    ASSERT_TRUE((*m)->forward({&t3, 1}, pool, s, c.data()).ok());
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << t;
    ASSERT_EQ(0, std::memcmp(a.data(), c.data(), a.size() * sizeof(float))) << t;
  }
  // A follower (tova at k = 64: no eviction yet) rides a `full` leader and ends where a run of
  // its own would: its next token's logits equal the leader's. Within the fixture's window of
  // 16 (a window layer evicts past it, where riding along is refused as inexact).
  auto lead = runtime::make_state(**m, cache_options("full", 0), 0);
  auto fol = runtime::make_state(**m, cache_options("tova", 64), 0);
  ASSERT_TRUE(lead.ok() && fol.ok());
  std::vector<model::BatchToken> prompt;
  for (int i = 0; i < 10; ++i) prompt.push_back({ids[i], lead->get(), false});
  ASSERT_TRUE((*m)->forward(prompt, pool, s, nullptr).ok());
  for (auto& t : prompt) t.state = fol->get();
  ASSERT_TRUE((*m)->forward(prompt, pool, s, nullptr).ok());
  const model::Follower fl{.leader = lead->get(), .state = fol->get()};
  const model::BatchToken step{.token = ids[10], .state = lead->get(), .logits = false};
  const Status fw = (*m)->forward({&step, 1}, pool, s, nullptr, {&fl, 1});
  ASSERT_TRUE(fw.ok()) << fw.message();
  const model::BatchToken n1{.token = ids[11], .state = lead->get(), .logits = true};
  const model::BatchToken n2{.token = ids[11], .state = fol->get(), .logits = true};
  ASSERT_TRUE((*m)->forward({&n1, 1}, pool, s, a.data()).ok());
  ASSERT_TRUE((*m)->forward({&n2, 1}, pool, s, b.data()).ok());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

// The E fixture with one metadata key replaced, one tensor left out, or tensors whose name
// starts with zero_prefix written as zeros.
std::unique_ptr<io::GgufFile> g4e_edited(const std::string& key, const io::GgufValue* value,
                                         const std::string& drop_tensor = "",
                                         const std::string& zero_prefix = "") {
  auto f = io::GgufFile::open(g4e_path("gemma4e-f32.gguf"));
  EXPECT_TRUE(f.ok()) << f.message();
  io::GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata()) w.set(k, v);
  if (value != nullptr) w.set(key, *value);
  for (const io::GgufTensorInfo& t : (*f)->tensors()) {
    if (t.name == drop_tensor) continue;
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    if (!zero_prefix.empty() && t.name.starts_with(zero_prefix)) std::fill(bytes.begin(), bytes.end(), 0);
    w.add_tensor(t.name, t.type, t.dims, std::move(bytes));
  }
  auto g = io::GgufFile::from_bytes(w.to_bytes(), "gemma4e-edited.gguf");
  EXPECT_TRUE(g.ok()) << g.message();
  return std::move(g).value();
}

std::string g4e_load_error(std::unique_ptr<io::GgufFile> f) {
  auto m = model::Model::from_file(std::move(f));
  return m.ok() ? "" : m.message();
}

// The fixture exercises what it claims: the per-layer inputs (their token table, or each
// layer's projection of them, zeroed) move the logits far beyond the golden tolerance.
TEST(ArchGemma4E, PerLayerInputsMoveTheLogits) {
  TOVA_REQUIRE_SHARED();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(32);
  ThreadPool pool(2);
  auto base = model::Model::load(g4e_path("gemma4e-f32.gguf"));
  ASSERT_TRUE(base.ok()) << base.message();
  const auto want = all_logits(**base, ids, cache_options("full", 0), 32, pool);
  for (const char* zeroed : {"per_layer_token_embd.", "blk.3.proj."}) {
    auto m = model::Model::from_file(g4e_edited("", nullptr, "", zeroed));
    ASSERT_TRUE(m.ok()) << m.message();
    const auto got = all_logits(**m, ids, cache_options("full", 0), 32, pool);
    float most = 0.f;
    for (size_t i = 0; i < got.size(); ++i) most = std::max(most, std::abs(got[i] - want[i]));
    EXPECT_GT(most, 0.05f) << zeroed;
  }
}

TEST(ArchGemma4E, SharingAndPerLayerInputsThatDisagreeWithTheFileAreRefused) {
  TOVA_REQUIRE_SHARED();
  // Two shared layers: layer 7 would read layer 4 (the last window layer with K/V) where
  // llama.cpp's rule reads layer 5 (global).
  const io::GgufValue two = io::GgufValue::make_u32(2);
  std::string e = g4e_load_error(g4e_edited("gemma4.attention.shared_kv_layers", &two));
  EXPECT_NE(e.find("gemma4.attention.shared_kv_layers 2"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // Every layer shared.
  const io::GgufValue nine = io::GgufValue::make_u32(9);
  e = g4e_load_error(g4e_edited("gemma4.attention.shared_kv_layers", &nine));
  EXPECT_NE(e.find("fewer than 2"), std::string::npos) << e;
  // No sharing: layer 6 then lacks its K projection.
  const io::GgufValue zero = io::GgufValue::make_u32(0);
  e = g4e_load_error(g4e_edited("gemma4.attention.shared_kv_layers", &zero));
  EXPECT_NE(e.find("blk.6.attn_k.weight"), std::string::npos) << e;
  // A per-layer tensor missing, and per-layer inputs of another width.
  e = g4e_load_error(g4e_edited("", nullptr, "blk.3.inp_gate.weight"));
  EXPECT_NE(e.find("missing tensor 'blk.3.inp_gate.weight'"), std::string::npos) << e;
  const io::GgufValue p16 = io::GgufValue::make_u32(16);
  e = g4e_load_error(g4e_edited("gemma4.embedding_length_per_layer_input", &p16));
  EXPECT_NE(e.find("per_layer_token_embd.weight"), std::string::npos) << e;
  // Without per-layer inputs the tensors are unused.
  e = g4e_load_error(g4e_edited("gemma4.embedding_length_per_layer_input", &zero));
  EXPECT_NE(e.find("is not used"), std::string::npos) << e;
}

}  // namespace
}  // namespace tova::testing
