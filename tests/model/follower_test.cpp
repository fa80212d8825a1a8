// Followers (model::Follower): a bounded sequence that rides along with `full` until its first
// eviction ends up in exactly the state it would have reached computing everything itself, and
// the forward pass refuses followers whose riding along would not be exact.
#include <gtest/gtest.h>

#include "model_test_util.h"

namespace tova::testing {
namespace {

constexpr int kBlock = 20;  // tokens per sequence and call: >= kMatmulBatchInvariantTokens

struct Seqs {
  std::vector<std::unique_ptr<kv::MultiState>> states;
  std::vector<std::vector<float>> logits;  // per sequence: [position][n_vocab]
};

// Feeds ids to full + the given bounded configurations in blocks of kBlock positions. With
// ride_until > 0, every bounded configuration follows full for positions below ride_until, as
// long as it holds every token of the block (ridden(c): how far it rode).
Seqs feed(const model::Model& m, const std::vector<int32_t>& ids,
          const std::vector<std::pair<std::string, int>>& cfgs, int ride_until,
          ThreadPool& pool) {
  Seqs r;
  const int n_vocab = m.config().n_vocab;
  for (const auto& [p, k] : cfgs) {
    r.states.push_back(std::move(runtime::make_state(m, cache_options(p, k), 1)).value());
    r.logits.emplace_back(ids.size() * n_vocab);
  }
  model::ForwardScratch scratch;
  std::vector<float> out;
  for (size_t p0 = 0; p0 < ids.size(); p0 += kBlock) {
    std::vector<model::BatchToken> batch;
    std::vector<model::Follower> followers;
    std::vector<size_t> in_batch;
    for (size_t c = 0; c < cfgs.size(); ++c) {
      if (c > 0 && static_cast<int>(p0) < ride_until &&
          static_cast<int>(p0) + kBlock <= r.states[c]->holds_all_until()) {
        followers.push_back({.leader = r.states[0].get(), .state = r.states[c].get()});
        continue;
      }
      in_batch.push_back(c);
      for (size_t p = p0; p < p0 + kBlock; ++p) {
        batch.push_back({.token = ids[p], .state = r.states[c].get(), .logits = true});
      }
    }
    out.resize(batch.size() * n_vocab);
    const Status st = m.forward(batch, pool, scratch, out.data(), followers);
    EXPECT_TRUE(st.ok()) << st.message();
    for (size_t j = 0; j < in_batch.size(); ++j) {
      std::copy_n(&out[j * kBlock * n_vocab], kBlock * n_vocab,
                  &r.logits[in_batch[j]][p0 * n_vocab]);
    }
  }
  return r;
}

TEST(Follower, RidingAlongUntilTheBudgetIsBitIdentical) {
  TOVA_REQUIRE_SHARED();
  static_assert(kBlock >= kernels::kMatmulBatchInvariantTokens);
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(6 * kBlock);
  // Every scoring flavour: none (window, sink), the current query (tova), accumulated (h2o),
  // head-wise. Budgets of at least 2 blocks: they ride along for 2 blocks, then evict.
  std::vector<std::pair<std::string, int>> cfgs = {{"full", 0}};
  for (const std::string& p : every_bounded_policy()) {
    cfgs.emplace_back(p, 40 + static_cast<int>(cfgs.size()) % 11);
  }
  ThreadPool pool(2);
  Seqs own = feed(**m, ids, cfgs, 0, pool);
  Seqs rode = feed(**m, ids, cfgs, 2 * kBlock, pool);
  const int n_vocab = (*m)->config().n_vocab;
  for (size_t c = 1; c < cfgs.size(); ++c) {
    SCOPED_TRACE(cfgs[c].first);
    // A per-layer budget (pyramidkv) may hold fewer than 2 blocks in some layer.
    const size_t ridden = std::min(2, rode.states[c]->holds_all_until() / kBlock) * kBlock;
    // Evictions happened after riding along (where the sequence outgrows what the policy holds:
    // rkv's buffer adds to the budget), and the held positions agree in every layer.
    if (static_cast<int64_t>(ids.size()) > own.states[c]->holds_all_until()) {
      EXPECT_GT(own.states[c]->layer(0).n_evicted(), 0);
    }
    for (int il = 0; il < own.states[c]->n_layer(); ++il) {
      const kv::LayerState& a = own.states[c]->layer(il);
      const kv::LayerState& b = rode.states[c]->layer(il);
      ASSERT_EQ(a.n_held(), b.n_held());
      ASSERT_EQ(a.n_evicted(), b.n_evicted());
      ASSERT_EQ(std::vector<int64_t>(a.pos(), a.pos() + a.n_slot() * a.n_head_kv()),
                std::vector<int64_t>(b.pos(), b.pos() + b.n_slot() * b.n_head_kv()))
          << "layer " << il;
    }
    // The positions it computed itself: the same logits, bit for bit.
    for (size_t i = ridden * n_vocab; i < ids.size() * n_vocab; ++i) {
      ASSERT_EQ(own.logits[c][i], rode.logits[c][i]) << "position " << i / n_vocab;
    }
    // And while riding along, full's logits were its own.
    for (size_t i = 0; i < ridden * n_vocab; ++i) {
      ASSERT_EQ(own.logits[c][i], own.logits[0][i]) << "position " << i / n_vocab;
    }
  }
}

TEST(Follower, InexactFollowersAreRefused) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  ThreadPool pool(1);
  model::ForwardScratch scratch;
  auto make = [&](const std::string& p, int k, int64_t max_new = 1) {
    auto o = cache_options(p, k);
    if (max_new > 1) o.prefill = PrefillMode{.chunk = static_cast<int>(max_new)};
    return std::move(runtime::make_state(**m, o, 64)).value();
  };
  auto full = make("full", 0);
  auto small = make("tova", 4);
  auto other = make("window", 16);
  std::vector<float> logits(8 * (*m)->config().n_vocab);
  std::vector<model::BatchToken> batch;
  for (int i = 0; i < 8; ++i) batch.push_back({.token = 1 + i, .state = full.get()});
  auto expect_error = [&](std::vector<model::Follower> f, const std::string& what) {
    const Status st = (*m)->forward(batch, pool, scratch, logits.data(), f);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_FALSE(st.message().empty()) << what;
  };
  // k=4 cannot hold 8 tokens without evicting.
  expect_error({{.leader = full.get(), .state = small.get()}}, "would evict");
  // The leader is not in the batch.
  expect_error({{.leader = other.get(), .state = small.get()}}, "leader not in batch");
  // A follower with tokens of its own.
  batch.push_back({.token = 3, .state = other.get()});
  expect_error({{.leader = full.get(), .state = other.get()}}, "follower in batch");
  batch.pop_back();
  // Two leaders for one follower.
  expect_error({{.leader = full.get(), .state = other.get()},
                {.leader = full.get(), .state = other.get()}},
               "follows twice");
  // Chunked prefill is not exact per token.
  auto chunked = make("window", 16, 8);
  expect_error({{.leader = full.get(), .state = chunked.get()}}, "chunked");
  // Nothing ran: full is still at position 0, and a valid follower then works.
  EXPECT_EQ(full->n_seen(), 0);
  ASSERT_TRUE((*m)->forward(batch, pool, scratch, logits.data(),
                            std::vector<model::Follower>{{.leader = full.get(), .state = other.get()}})
                  .ok());
  EXPECT_EQ(other->n_seen(), 8);
  EXPECT_EQ(other->layer(0).n_held(), 8);
  // Now at a different position from a fresh leader.
  auto fresh = make("full", 0);
  for (auto& t : batch) t.state = fresh.get();
  expect_error({{.leader = fresh.get(), .state = other.get()}}, "position");
}

}  // namespace
}  // namespace tova::testing
