// BatchScheduler and Session: many sessions with different policies batched into one forward
// pass per step get exactly the greedy tokens each gets alone; a long prompt is cut by the
// step's token budget without changing results; a cloned session continues exactly as the
// original; the engine loads the bundled model.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kv/policy_registry.h"
#include "runtime/batch_scheduler.h"
#include "test_data.h"
#include "tova/engine.h"

namespace tova {
namespace {

std::unique_ptr<Engine> new_stories_engine() {
  auto e = Engine::load({.model_path = "",  // the bundled stories260K
                         .n_threads = 2});
  EXPECT_TRUE(e.ok()) << e.message();
  return std::move(*e);
}

SessionOptions greedy(const std::string& policy, int budget) {
  SessionOptions o;
  auto c = parse_cache_options(policy, budget, "exact", "f32");
  EXPECT_TRUE(c.ok()) << c.message();
  o.cache = *c;
  o.sampling.temp = 0;
  return o;
}

// Greedy tokens of every session, all fed through one scheduler together.
std::vector<std::vector<int32_t>> run_greedy(const Engine& e,
                                             std::vector<std::unique_ptr<Session>>& ss, int n_gen,
                                             int step_tokens) {
  runtime::BatchScheduler sched(e, {.step_tokens = step_tokens});
  std::vector<std::vector<int32_t>> out(ss.size());
  std::vector<Session*> live;
  for (auto& s : ss) live.push_back(s.get());
  while (true) {
    auto st = sched.step(live);
    EXPECT_TRUE(st.ok()) << st.message();
    if (st->n_tokens == 0) break;
    for (size_t i = 0; i < ss.size(); ++i) {
      Session& s = *ss[i];
      if (s.has_logits() && static_cast<int>(out[i].size()) < n_gen) {
        const int32_t id = s.sample();
        out[i].push_back(id);
        if (static_cast<int>(out[i].size()) < n_gen) s.queue(id);
      }
    }
  }
  return out;
}

TEST(BatchScheduler, BatchedSessionsGetTheTokensTheyGetAlone) {
  auto e = new_stories_engine();
  // Every registered policy (the registry's examples), sessions told their prompt's length:
  // prompt-holding policies hold it whole however the scheduler cuts it.
  const std::vector<std::string> policies = kv::all_policy_examples();
  const int n_pol = static_cast<int>(policies.size());
  std::vector<std::unique_ptr<Session>> together;
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < std::max(12, n_pol); ++i) {
    const std::string text = "Once upon a time there was a little " +
                             std::string(i % 2 ? "girl" : "dog") + std::string(i, '!');
    const auto prompt = e->tokenize(text);
    std::vector<std::unique_ptr<Session>> one;
    for (auto* set : {&together, &one}) {
      SessionOptions so = greedy(policies[i % n_pol], 8 + i);
      so.n_prompt_hint = static_cast<int64_t>(prompt.size());
      auto s = e->new_session(so);
      ASSERT_TRUE(s.ok()) << s.message();
      (*s)->queue(prompt);
      set->push_back(std::move(*s));
    }
    alone.push_back(run_greedy(*e, one, 24, 512)[0]);
  }
  // A small step budget cuts the prompts into pieces and mixes them with decoding sessions.
  const auto got = run_greedy(*e, together, 24, 7);
  for (size_t i = 0; i < alone.size(); ++i) EXPECT_EQ(got[i], alone[i]) << "session " << i;
}

TEST(BatchScheduler, StepRespectsTheTokenBudgetAndDecodersGoFirst) {
  auto e = new_stories_engine();
  runtime::BatchScheduler sched(*e, {.step_tokens = 5});
  auto a = e->new_session(greedy("tova", 16));
  auto b = e->new_session(greedy("full", 0));
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<int32_t> prompt = {1, 400, 401, 402, 403, 404, 405, 406, 407};
  (*a)->queue(prompt);
  (*b)->queue(prompt[0]);
  Session* both[] = {a->get(), b->get()};
  auto st = sched.step(both);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->n_tokens, 5);
  EXPECT_EQ((*b)->n_pending(), 0);  // the decoder went first
  EXPECT_TRUE((*b)->has_logits());
  EXPECT_EQ((*a)->n_fed(), 4);
  EXPECT_FALSE((*a)->has_logits());
  ASSERT_TRUE(sched.drain(both).ok());
  EXPECT_EQ((*a)->n_fed(), 9);
  EXPECT_TRUE((*a)->has_logits());
  EXPECT_EQ((*a)->n_seen(), 9);
}

TEST(Session, CloneContinuesExactlyAsTheOriginal) {
  auto e = new_stories_engine();
  auto s = e->new_session(greedy("tova", 6));
  ASSERT_TRUE(s.ok());
  (*s)->queue(e->tokenize("One day a cat saw a big red ball"));
  std::vector<std::unique_ptr<Session>> a;
  a.push_back(std::move(*s));
  runtime::BatchScheduler sched(*e);
  Session* first[] = {a[0].get()};
  ASSERT_TRUE(sched.drain(first).ok());
  std::vector<std::unique_ptr<Session>> b;
  b.push_back(a[0]->clone());
  EXPECT_EQ(b[0]->history(), a[0]->history());
  EXPECT_EQ(run_greedy(*e, a, 20, 512), run_greedy(*e, b, 20, 512));
}

TEST(Engine, MissingModelIsAnErrorThatNamesTheFile) {
  auto e = Engine::load({.model_path = "/nonexistent/model.gguf", .n_threads = 1});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("/nonexistent/model.gguf"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace tova
