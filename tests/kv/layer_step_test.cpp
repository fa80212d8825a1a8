// kv::step_layer: the order of a step (join, attend, observe, evict) in exact and chunked
// processing, and followers that take the leader's rows and probabilities.
#include "kv/layer_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kStepHead = 4;
constexpr int kStepHeadKv = 2;
constexpr int kStepHeadDim = 4;
constexpr int kKvDim = kStepHeadKv * kStepHeadDim;

std::unique_ptr<MultiState> make_state(const std::string& policy, int budget, int max_new = 1) {
  auto spec = parse_policy(policy, budget);
  EXPECT_TRUE(spec.ok()) << spec.message();
  auto ms = MultiState::create({.n_layer = 1,
                                .n_head = kStepHead,
                                .n_head_kv = kStepHeadKv,
                                .head_dim = kStepHeadDim,
                                .policy = *spec,
                                .max_new = max_new,
                                .initial_slots = 4});
  EXPECT_TRUE(ms.ok()) << ms.message();
  return std::move(ms).value();
}

// Writes, for every query head, probabilities that depend only on the held positions the query
// sees (so a follower and a sequence on its own see the same), and logs the step's order.
class RecordingAttention final : public StepAttention {
 public:
  explicit RecordingAttention(const int64_t* pos) : pos_(pos) {}
  void joined(const LayerState& L) override { out_ << 'J' << L.n_held() << ' '; }
  void attend(const LayerState& L, int t, float* probs) override {
    out_ << 'A' << t << ':' << L.n_held() << (probs != nullptr ? "p " : " ");
    if (probs == nullptr) return;
    const int group = kStepHead / kStepHeadKv;
    for (int h = 0; h < kStepHead; ++h) {
      const int64_t* pos = L.pos() + static_cast<size_t>(h / group) * L.n_slot();
      float* row = probs + static_cast<size_t>(h) * L.n_slot();
      double sum = 0;
      for (int s = 0; s < L.n_slot(); ++s) {
        const bool seen = pos[s] >= 0 && pos[s] <= pos_[t];
        row[s] = seen ? static_cast<float>(((pos[s] * 7 + h * 3) % 11) + 1) : 0.f;
        sum += row[s];
      }
      for (int s = 0; s < L.n_slot(); ++s) row[s] = static_cast<float>(row[s] / sum);
    }
  }
  std::string log() const { return out_.str(); }

 private:
  std::ostringstream out_;
  const int64_t* pos_;  // [step tokens] each query's position
};

struct Step {
  std::vector<int> idx;
  std::vector<int64_t> pos;
  std::vector<float> k, v;
  explicit Step(int64_t first, int n, std::mt19937& rng) {
    std::normal_distribution<float> dist;
    for (int t = 0; t < n; ++t) {
      idx.push_back(t);
      pos.push_back(first + t);
    }
    k.resize(static_cast<size_t>(n) * kKvDim);
    v.resize(k.size());
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
  }
  StepRows rows() const {
    return {.idx = idx, .pos = pos.data(), .k = k.data(), .v = v.data(), .kv_dim = kKvDim};
  }
};

TEST(LayerStep, ExactJoinsAttendsAndEvictsOneTokenAtATime) {
  auto ms = make_state("tova", 2);
  std::mt19937 rng(1);
  const Step step(0, 4, rng);
  RecordingAttention att(step.pos.data());
  StepScratch scratch;
  step_layer(*ms, {}, 0, step.rows(), kStepHead, att, scratch);
  // k + 1 states are held when a token attends; the policy scores (tova) so probs are given.
  EXPECT_EQ(att.log(), "J1 A0:1p J2 A1:2p J3 A2:3p J3 A3:3p ");
  EXPECT_EQ(ms->layer(0).n_held(), 2);
}

TEST(LayerStep, ChunkJoinsWholeAttendsCausallyAndEvictsOnce) {
  auto ms = make_state("window", 2, /*max_new=*/4);
  std::mt19937 rng(2);
  StepScratch scratch;
  const Step first(0, 4, rng);
  RecordingAttention a1(first.pos.data());
  step_layer(*ms, {}, 0, first.rows(), kStepHead, a1, scratch);
  ms->advance(4);
  EXPECT_EQ(a1.log(), "J4 A0:4 A1:4 A2:4 A3:4 ");  // window does not score: no probs
  EXPECT_EQ(ms->layer(0).n_held(), 2);
  const Step second(4, 3, rng);
  RecordingAttention a2(second.pos.data());
  step_layer(*ms, {}, 0, second.rows(), kStepHead, a2, scratch);
  EXPECT_EQ(a2.log(), "J5 A0:5 A1:5 A2:5 ");
  const LayerState& L = ms->layer(0);
  ASSERT_EQ(L.n_held(), 2);
  for (int g = 0; g < kStepHeadKv; ++g) {  // window keeps the newest, packed into the lowest slots
    std::vector<int64_t> held(L.pos() + g * L.n_slot(), L.pos() + g * L.n_slot() + L.slot_end());
    std::sort(held.begin(), held.end());
    EXPECT_EQ(held, (std::vector<int64_t>{5, 6})) << "KV head " << g;
  }
}

// An exact step that no layer evicts in and no policy scores joins whole and attends at once
// (the model splits such tokens over threads); one that evicts, or scores, goes token by token.
TEST(LayerStep, ExactStepWithoutEvictionOrScoresJoinsWholeFirst) {
  std::mt19937 rng(4);
  const Step step(0, 4, rng);
  struct Case {
    const char* policy;
    int budget;
    const char* log;
  };
  for (const Case& c : {Case{"full", 0, "J4 A0:4 A1:4 A2:4 A3:4 "},
                        Case{"window", 4, "J4 A0:4 A1:4 A2:4 A3:4 "},
                        Case{"window", 3, "J1 A0:1 J2 A1:2 J3 A2:3 J4 A3:4 "},
                        Case{"h2o", 8, "J1 A0:1p J2 A1:2p J3 A2:3p J4 A3:4p "}}) {
    auto ms = make_state(c.policy, c.budget);
    RecordingAttention att(step.pos.data());
    StepScratch scratch;
    step_layer(*ms, {}, 0, step.rows(), kStepHead, att, scratch);
    EXPECT_EQ(att.log(), c.log) << c.policy << " k=" << c.budget;
    EXPECT_EQ(ms->layer(0).n_held(), std::min(4, c.budget > 0 ? c.budget : 4)) << c.policy;
  }
}

TEST(LayerStep, FollowerTakesTheLeadersRowsAndProbabilities) {
  // A tova k=8 follower of a `full` leader, for 6 tokens (it never evicts), ends exactly as the
  // same tova sequence stepped on its own: the same slots, rows and accumulated scores.
  for (const std::string policy : {"tova", "h2o"}) {
    SCOPED_TRACE(policy);
    auto leader = make_state("full", 8), follower = make_state(policy, 8);
    auto alone = make_state(policy, 8);
    std::mt19937 rng(3);
    StepScratch s1, s2;
    for (int64_t p = 0; p < 6; p += 3) {
      const Step step(p, 3, rng);
      RecordingAttention a1(step.pos.data()), a2(step.pos.data());
      MultiState* followers[] = {follower.get()};
      step_layer(*leader, followers, 0, step.rows(), kStepHead, a1, s1);
      step_layer(*alone, {}, 0, step.rows(), kStepHead, a2, s2);
      for (MultiState* m : {leader.get(), follower.get(), alone.get()}) m->advance(3);
      // The leader (full) scores nothing itself; its follower does, so probs are computed.
      EXPECT_NE(a1.log().find("p "), std::string::npos);
    }
    const LayerState& F = follower->layer(0);
    const LayerState& A = alone->layer(0);
    ASSERT_EQ(F.n_held(), 6);
    ASSERT_EQ(A.n_held(), 6);
    const int n = std::min(F.n_slot(), A.n_slot());
    for (int g = 0; g < kStepHeadKv; ++g) {
      for (int s = 0; s < n; ++s) {
        EXPECT_EQ(F.pos()[g * F.n_slot() + s], A.pos()[g * A.n_slot() + s]);
      }
    }
    EXPECT_EQ(0, std::memcmp(F.keys(), A.keys(), sizeof(float) * kStepHeadKv * F.n_slot() * kStepHeadDim));
    EXPECT_EQ(F.policy().state(), A.policy().state());
  }
}

TEST(LayerStep, QueriesBeforeRopeReachThePoliciesThatReadThem) {
  // expected-attention records every row's query (positions from 4 on) in its state: on its own
  // at k = 6 (tokens 0..3 join first, 4..7 one at a time as it evicts) and as a follower of a
  // `full` leader, it ends with the same ring of queries; attention computes no probabilities
  // for it.
  auto own = make_state("expected-attention:8", 6);
  auto leader = make_state("full", 16), follower = make_state("expected-attention:8", 16);
  const QueryRope rope{.head_dim = kStepHeadDim, .n_rot = 2, .theta = {0.5}, .scale = 0.5};
  std::mt19937 rng(5);
  std::vector<float> all_q;
  StepScratch s1, s2;
  for (int64_t p = 0; p < 8; p += 4) {
    const Step step(p, 4, rng);
    std::vector<float> q(4 * kStepHead * kStepHeadDim);
    for (float& x : q) x = static_cast<float>(rng() % 64) / 8.f;
    all_q.insert(all_q.end(), q.begin(), q.end());
    StepRows rows = step.rows();
    rows.q_pre = q.data();
    rows.q_dim = kStepHead * kStepHeadDim;
    rows.rope = &rope;
    RecordingAttention a1(step.pos.data()), a2(step.pos.data());
    step_layer(*own, {}, 0, rows, kStepHead, a1, s1);
    EXPECT_EQ(a1.log().find("p "), std::string::npos) << a1.log();
    MultiState* followers[] = {follower.get()};
    step_layer(*leader, followers, 0, rows, kStepHead, a2, s2);
    EXPECT_EQ(a2.log().find("p "), std::string::npos) << a2.log();
    for (MultiState* m : {own.get(), leader.get(), follower.get()}) m->advance(4);
  }
  const std::vector<double> st = own->layer(0).policy().state();
  ASSERT_EQ(st.size(), 1u + 8 * kStepHead * kStepHeadDim);
  EXPECT_EQ(st[0], 4.0);  // rows 4..7
  for (size_t i = 0; i < 4 * kStepHead * kStepHeadDim; ++i) {
    EXPECT_EQ(st[1 + i], all_q[4 * kStepHead * kStepHeadDim + i]) << i;
  }
  EXPECT_EQ(follower->layer(0).policy().state(), st);
}

}  // namespace
}  // namespace tova::kv
