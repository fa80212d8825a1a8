// The hybrid families (qwen35, qwen35moe, qwen3next: Gated DeltaNet + gated attention; lfm2: gated
// short convolutions + attention, its own layout and bad input in lfm2_test.cpp) on their fixtures
// (tests/data/arch): a prompt fed at once equals it fed token by token; the multi-state bounds
// the attention layers only and keeps a fixed-size recurrent state per DeltaNet layer, which
// clone(), followers and session files carry; a DeltaNet layer missing its tensors, a layer
// pattern that disagrees with the tensors and a session of another architecture are one error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/config.h"
#include "model/model_test_util.h"
#include "model/weights.h"
#include "runtime/session_file.h"

namespace tova::testing {
namespace {

std::string fixture(const std::string& family) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + family + "-f32.gguf";
}

double qwen35_rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

class Hybrid : public ::testing::TestWithParam<std::string> {};
class DeltaNetHybrid : public ::testing::TestWithParam<std::string> {};

TEST_P(DeltaNetHybrid, LayersAreThreeDeltaNetThenOneAttentionTwice) {
  auto m = model::Model::load(fixture(GetParam()));
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layer, 8);
  for (int il = 0; il < 8; ++il) {
    const bool recurrent = il % 4 != 3;
    EXPECT_EQ(c.recurrent(il), recurrent) << il;
    EXPECT_EQ((*m)->weights().layers[il].mixer_kind,
              recurrent ? model::MixerKind::kDeltaNet : model::MixerKind::kAttention);
    EXPECT_EQ((*m)->weights().layers[il].q_gate, !recurrent);
  }
  auto st = runtime::make_state(**m, cache_options("full", 0), 0);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ((*st)->n_layer(), 2);      // K/V: the attention layers
  // Per DeltaNet layer: conv (C = 2 x 32 + 64 = 128 channels x 3 taps) + delta (4 x 16 x 16).
  EXPECT_EQ((*st)->n_recurrent(), 6);
  EXPECT_EQ((*st)->recurrent_bytes(), 6u * (128 * 3 + 4 * 16 * 16) * 4);
}

// The prompt form (several tokens of a sequence in one batch) and the decoding form (one at a
// time) run the same recurrence: the logits of every position agree within 1e-5 relative
// (qwen35moe, lfm2moe: 5e-5, their experts run as one GEMM per expert in a prompt and as the
// chosen rows in decoding, which moe_test.cpp already bounds by 1e-4 absolute; qwen3next, 4
// experts chosen per token where qwen35moe's fixture chooses 2: 1e-4, measured 6.4e-5).
TEST_P(Hybrid, PromptAtOnceEqualsTokenByToken) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(fixture(GetParam()));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(48);
  ThreadPool pool(2);
  const auto at_once = all_logits(**m, ids, cache_options("full", 0), 48, pool);
  const auto one_by_one = all_logits(**m, ids, cache_options("full", 0), 1, pool);
  const double bound = GetParam() == "qwen3next"   ? 1e-4
                       : GetParam().ends_with("moe") ? 5e-5
                                                     : 1e-5;
  EXPECT_LT(qwen35_rel_l2(at_once, one_by_one), bound);
}

// tova and window at k = 8 bound the two attention layers (falcon-h1: all four; 8 states per KV
// head after 48 tokens) and nothing else; the recurrent states are the same bytes whatever the
// policy; a budget above the length equals full bit for bit.
TEST_P(Hybrid, PoliciesBoundOnlyTheAttentionLayers) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(fixture(GetParam()));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(48);
  ThreadPool pool(2);
  std::unique_ptr<kv::MultiState> full, big;
  const auto want = all_logits(**m, ids, cache_options("full", 0), 16, pool, &full);
  const auto same = all_logits(**m, ids, cache_options("tova", 64), 16, pool, &big);
  EXPECT_EQ(0, std::memcmp(want.data(), same.data(), want.size() * sizeof(float)));
  for (const char* p : {"tova", "window", "h2o"}) {
    SCOPED_TRACE(p);
    std::unique_ptr<kv::MultiState> st;
    const auto got = all_logits(**m, ids, cache_options(p, 8), 16, pool, &st);
    // falcon-h1: every one of its 4 layers attends (beside its Mamba2).
    ASSERT_EQ(st->n_layer(), GetParam() == "falcon-h1" ? 4 : 2);
    for (int il = 0; il < st->n_layer(); ++il) EXPECT_EQ(st->layer(il).n_held(), 8);
    EXPECT_EQ(st->recurrent_bytes(), full->recurrent_bytes());
    for (float x : got) ASSERT_TRUE(std::isfinite(x));
  }
}

// clone() copies the recurrent states: the clone and the original continue identically; a
// follower riding a leader ends each step with the leader's recurrent state.
TEST_P(Hybrid, CloneAndFollowersCarryTheRecurrentState) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(fixture(GetParam()));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const int n_vocab = (*m)->config().n_vocab;
  auto a = runtime::make_state(**m, cache_options("full", 0), 0);
  ASSERT_TRUE(a.ok());
  model::ForwardScratch scratch;
  std::vector<float> la(n_vocab), lb(n_vocab);
  std::vector<model::BatchToken> batch;
  for (int i = 0; i < 20; ++i) batch.push_back({ids[i], a->get(), i == 19});
  ASSERT_TRUE((*m)->forward(batch, pool, scratch, la.data()).ok());
  std::unique_ptr<kv::MultiState> b = (*a)->clone();
  for (int i = 20; i < 30; ++i) {
    std::vector<model::BatchToken> one = {{ids[i], a->get(), true}};
    ASSERT_TRUE((*m)->forward(one, pool, scratch, la.data()).ok());
    one = {{ids[i], b.get(), true}};
    ASSERT_TRUE((*m)->forward(one, pool, scratch, lb.data()).ok());
    ASSERT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float))) << i;
  }
  // A follower: tova at k = 64 (no eviction before 64 tokens) rides a full leader at its
  // position.
  auto f = runtime::make_state(**m, cache_options("tova", 64), 0);
  ASSERT_TRUE(f.ok());
  auto leader = (*a)->clone();
  std::vector<model::BatchToken> prompt;
  for (int i = 0; i < 30; ++i) prompt.push_back({ids[i], f->get(), false});
  ASSERT_TRUE((*m)->forward(prompt, pool, scratch, nullptr).ok());
  const model::Follower fl{.leader = leader.get(), .state = f->get()};
  std::vector<model::BatchToken> step = {{ids[30], leader.get(), true}};
  ASSERT_TRUE((*m)->forward(step, pool, scratch, la.data(), {&fl, 1}).ok());
  for (int ir = 0; ir < leader->n_recurrent(); ++ir) {
    const kv::RecurrentState &x = leader->recurrent(ir), &y = (*f)->recurrent(ir);
    // A short-convolution state has no delta part (its data() may be null: no memcmp of 0).
    if (x.shape().delta_floats() > 0) {
      EXPECT_EQ(0, std::memcmp(x.delta(), y.delta(), x.shape().delta_floats() * sizeof(float)));
    }
    EXPECT_EQ(0, std::memcmp(x.conv(), y.conv(), x.shape().conv_floats() * sizeof(float)));
  }
  EXPECT_EQ((*f)->n_seen(), 31);
}

// Session files carry the recurrent states: 30 tokens, save, load, 10 more == 40 in one go, bit
// for bit.
TEST_P(Hybrid, SessionFilesCarryTheRecurrentStates) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(fixture(GetParam()));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(40);
  ThreadPool pool(2);
  const int n_vocab = (*m)->config().n_vocab;
  const auto want = all_logits(**m, ids, cache_options("tova", 16), 10, pool);
  std::unique_ptr<kv::MultiState> st;
  std::vector<int32_t> first(ids.begin(), ids.begin() + 30);
  all_logits(**m, first, cache_options("tova", 16), 10, pool, &st);
  const auto bytes = runtime::encode_session(**m, runtime::SessionData{.state = std::move(st)});
  auto back = runtime::decode_session_bytes(**m, bytes);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(runtime::encode_session(**m, *back), bytes);
  model::ForwardScratch scratch;
  std::vector<float> got(10 * n_vocab);
  std::vector<model::BatchToken> batch;
  for (int i = 30; i < 40; ++i) batch.push_back({ids[i], back->state.get(), true});
  ASSERT_TRUE((*m)->forward(batch, pool, scratch, got.data()).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), &want[30 * n_vocab], got.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(Families, DeltaNetHybrid,
                         ::testing::Values("qwen35", "qwen35moe", "qwen3next"));
// Every hybrid family: the Gated DeltaNet ones, lfm2, lfm2moe (gated short convolutions),
// granitehybrid, nemotron_h and nemotron_h_moe (Mamba2; their feed-forward layers hold no
// state), falcon-h1 (attention beside Mamba2 in every layer: K/V and a recurrent state each).
INSTANTIATE_TEST_SUITE_P(Families, Hybrid,
                         ::testing::Values("qwen35", "qwen35moe", "lfm2", "lfm2moe",
                                           "granitehybrid", "nemotron_h", "nemotron_h_moe",
                                           "qwen3next", "falcon-h1"));

TEST(Hybrid, ASessionOfAnotherArchitectureIsOneError) {
  auto a = model::Model::load(fixture("qwen35"));
  auto b = model::Model::load(fixture("qwen35moe"));
  ASSERT_TRUE(a.ok() && b.ok());
  auto st = runtime::make_state(**a, cache_options("full", 0), 0);
  ASSERT_TRUE(st.ok());
  const auto bytes =
      runtime::encode_session(**a, runtime::SessionData{.state = std::move(st).value()});
  auto r = runtime::decode_session_bytes(**b, bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("architecture 'qwen35', this model's is 'qwen35moe'"),
            std::string::npos)
      << r.message();
  EXPECT_EQ(r.message().find('\n'), std::string::npos);
}

// The qwen35 fixture rewritten: without some tensors, or with a key changed.
std::string load_error(const std::vector<std::string>& drop, const std::string& key = "",
                       uint32_t value = 0) {
  auto f = io::GgufFile::open(fixture("qwen35"), io::GgufFile::Load::kRead);
  if (!f.ok()) return "open: " + f.message();
  io::GgufWriter out;
  for (const auto& [k, v] : (*f)->metadata()) out.set(k, v);
  if (!key.empty()) out.set(key, io::GgufValue::make_u32(value));
  for (const auto& t : (*f)->tensors()) {
    if (std::find(drop.begin(), drop.end(), t.name) != drop.end()) continue;
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  auto g = io::GgufFile::from_bytes(out.to_bytes(), "q.gguf");
  if (!g.ok()) return "gguf: " + g.message();
  auto c = model::load_config(**g);
  if (!c.ok()) return c.message();
  auto w = model::load_weights(**g, *c);
  return w.ok() ? "" : w.message();
}

TEST(Hybrid, BadLayersAreOneErrorNamingWhatIsWrong) {
  EXPECT_EQ(load_error({}), "");
  for (const char* t : {"blk.0.ssm_conv1d.weight", "blk.1.ssm_a", "blk.2.ssm_dt.bias",
                        "blk.4.ssm_alpha.weight", "blk.5.attn_qkv.weight"}) {
    const std::string e = load_error({t});
    EXPECT_NE(e.find(t), std::string::npos) << t << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  // Every second layer full attention: layer 1 has DeltaNet tensors.
  std::string e = load_error({}, "qwen35.full_attention_interval", 2);
  EXPECT_NE(e.find("makes layer 1 an attention layer"), std::string::npos) << e;
  EXPECT_NE(e.find("qwen35.full_attention_interval"), std::string::npos) << e;
  // Only layer 7 attends: layer 3 has attention tensors.
  e = load_error({}, "qwen35.full_attention_interval", 8);
  EXPECT_NE(e.find("makes layer 3 a Gated DeltaNet layer"), std::string::npos) << e;
  e = load_error({}, "qwen35.full_attention_interval", 100);
  EXPECT_NE(e.find("leaves no attention layer"), std::string::npos) << e;
  e = load_error({}, "qwen35.ssm.inner_size", 60);
  EXPECT_NE(e.find("qwen35.ssm.inner_size 60"), std::string::npos) << e;
  // One multi-token prediction block claimed: the last layer (an attention layer) is read as
  // the block, and its nextn tensors are missing (nextn_test.cpp: files with the block).
  e = load_error({}, "qwen35.nextn_predict_layers", 1);
  EXPECT_NE(e.find("missing tensor 'blk.7.nextn.eh_proj.weight'"), std::string::npos) << e;
}

}  // namespace
}  // namespace tova::testing
