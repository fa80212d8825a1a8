// Many sequences decoding together in one forward pass per step (the server's and the
// throughput benchmark's batched decode) give, sequence by sequence, what each gives alone;
// and a copied multi-state continues exactly as the original would.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "runtime/sampler.h"

namespace tova {
namespace {


std::unique_ptr<model::Model> stories() {
  auto m = model::Model::load(testing::shared_path("models/stories260K.gguf"));
  EXPECT_TRUE(m.ok()) << m.message();
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<int64_t> held_positions(const kv::MultiState& s) {
  std::vector<int64_t> out;
  for (int il = 0; il < s.n_layer(); ++il) {
    const kv::LayerState& l = s.layer(il);
    for (int i = 0; i < l.n_head_kv() * l.n_slot(); ++i) out.push_back(l.pos()[i]);
  }
  return out;
}

TEST(MultiStateClone, ContinuesExactlyAsTheOriginal) {
  TOVA_REQUIRE_SHARED();
  auto m = stories();
  const std::vector<int32_t> ids =
      testing::read_ids(testing::shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  model::ForwardScratch scratch;
  const int n_vocab = m->config().n_vocab;
  for (const std::string& policy : testing::every_policy()) {
    SCOPED_TRACE(policy);
    auto state = runtime::make_state(*m, testing::cache_options(policy, 24), 128);
    ASSERT_TRUE(state.ok()) << state.message();
    std::vector<float> a(n_vocab), b(n_vocab);
    ASSERT_TRUE(
        runtime::feed(*m, pool, scratch, **state, std::span(ids).first(60), 16, a.data()).ok());
    std::unique_ptr<kv::MultiState> copy = (*state)->clone();
    EXPECT_EQ(copy->n_seen(), 60);
    EXPECT_EQ(copy->bytes(), (*state)->bytes());
    for (size_t i = 60; i < ids.size(); ++i) {
      const model::BatchToken ta{.token = ids[i], .state = state->get(), .logits = true};
      const model::BatchToken tb{.token = ids[i], .state = copy.get(), .logits = true};
      ASSERT_TRUE(m->forward({&ta, 1}, pool, scratch, a.data()).ok());
      ASSERT_TRUE(m->forward({&tb, 1}, pool, scratch, b.data()).ok());
      ASSERT_EQ(a, b) << "position " << i;
    }
    EXPECT_EQ(held_positions(**state), held_positions(*copy));
    EXPECT_EQ(copy->layer(0).n_evicted(), (*state)->layer(0).n_evicted());
  }
}

// Greedy decoding of n tokens for every sequence; together: one forward pass per step over all.
std::vector<std::vector<int32_t>> greedy(const model::Model& m, ThreadPool& pool,
                                         std::vector<std::unique_ptr<kv::MultiState>>& states,
                                         std::vector<std::vector<float>> logits, int n,
                                         bool together) {
  const int n_vocab = m.config().n_vocab;
  model::ForwardScratch scratch;
  std::vector<std::vector<int32_t>> out(states.size());
  std::vector<float> batch_logits(states.size() * n_vocab);
  for (int step = 0; step < n; ++step) {
    std::vector<model::BatchToken> batch;
    for (size_t s = 0; s < states.size(); ++s) {
      const int32_t id = runtime::argmax(logits[s].data(), n_vocab);
      out[s].push_back(id);
      batch.push_back({.token = id, .state = states[s].get(), .logits = true});
    }
    if (together) {
      EXPECT_TRUE(m.forward(batch, pool, scratch, batch_logits.data()).ok());
      for (size_t s = 0; s < states.size(); ++s) {
        std::copy_n(&batch_logits[s * n_vocab], n_vocab, logits[s].data());
      }
    } else {
      for (size_t s = 0; s < states.size(); ++s) {
        EXPECT_TRUE(m.forward({&batch[s], 1}, pool, scratch, logits[s].data()).ok());
      }
    }
  }
  return out;
}

TEST(BatchedDecode, EachSequenceGetsTheTokensItGetsAlone) {
  TOVA_REQUIRE_SHARED();
  auto m = stories();
  const std::vector<int32_t> ids =
      testing::read_ids(testing::shared_path("golden/tokens-1024.json"));
  const int budgets[] = {16, 24, 40, 64};
  ThreadPool pool(2);
  const int n_vocab = m->config().n_vocab;
  // Mixed policies (every registered one), budgets and prompt lengths (past and short of their
  // budgets; prompt-holding policies cut theirs), in two identical sets: one decodes alone, one
  // together. Batch sizes on both sides of the matmul's batch-invariance threshold.
  const std::vector<std::string> policies = testing::every_policy();
  const int n_pol = static_cast<int>(policies.size());
  for (int n_seq : {7, 2 * n_pol}) {
    SCOPED_TRACE(n_seq);
    std::vector<std::unique_ptr<kv::MultiState>> alone, together;
    std::vector<std::vector<float>> logits;
    for (int s = 0; s < n_seq; ++s) {
      const std::string policy = policies[s % n_pol];
      const int budget = budgets[(s / n_pol + s) % 4];
      const size_t n_prompt = 10 + 13 * s % 90;
      const std::span<const int32_t> prompt(ids.data() + 3 * s, n_prompt);
      model::ForwardScratch scratch;
      std::vector<float> last(n_vocab);
      for (auto* set : {&alone, &together}) {
        auto st = runtime::make_state(*m, testing::cache_options(policy, budget), n_prompt);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_TRUE(runtime::feed(*m, pool, scratch, **st, prompt, 512, last.data()).ok());
        set->push_back(std::move(*st));
      }
      logits.push_back(last);
    }
    const auto a = greedy(*m, pool, alone, logits, 48, false);
    const auto b = greedy(*m, pool, together, logits, 48, true);
    for (int s = 0; s < n_seq; ++s) {
      EXPECT_EQ(a[s], b[s]) << "sequence " << s << " (" << policies[s % n_pol] << ")";
      EXPECT_EQ(held_positions(*alone[s]), held_positions(*together[s])) << "sequence " << s;
    }
  }
}

}  // namespace
}  // namespace tova
