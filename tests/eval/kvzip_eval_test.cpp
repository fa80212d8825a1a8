// kvzip in the task evaluation: its scoring pass runs at the prompt's end and at each turn's
// end, its cost is counted, a budget past the conversation equals full (the answers and their
// NLL bit for bit; the cache itself: tests/kv/kvzip_test.cpp), sessions refuse it (nothing would
// run its pass), and a chat template that cannot render the reconstruction prompt after the
// conversation is one clear error.
#include <gtest/gtest.h>

#include "eval/ppl_sweep.h"
#include "eval/task_eval.h"
#include "eval/task_samples.h"
#include "runtime/cache_options.h"
#include "runtime/continuation.h"
#include "runtime/kvzip_pass.h"
#include "runtime/sequence.h"
#include "test_data.h"

namespace tova::eval {
namespace {

using testing::shared_path;

struct Loaded {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tok::Tokenizer> tk;
};

Loaded load() {
  Loaded l;
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  EXPECT_TRUE(m.ok()) << m.message();
  l.model = std::move(m).value();
  auto t = tok::Tokenizer::from_gguf(l.model->file());
  EXPECT_TRUE(t.ok()) << t.message();
  l.tk = std::move(t).value();
  return l;
}

TEST(KvzipEval, PassesAreCountedAndABudgetPastTheConversationEqualsFull) {
  TOVA_REQUIRE_SHARED();
  Loaded l = load();
  auto samples = make_samples(*l.tk, {.tasks = {"niah_multikey"}, .lengths = {640},
                                      .depths = {25}, .samples = 1, .max_new = 6, .turns = 2});
  ASSERT_TRUE(samples.ok()) << samples.message();
  const TaskSample& s = samples->samples[0];
  auto cfgs = sweep_configs(std::vector<std::string>{"full", "kvzip"}, std::vector<int>{32, 4096}, 1 << 30);
  ASSERT_TRUE(cfgs.ok()) << cfgs.message();
  ThreadPool pool(2);
  auto r = run_eval(*l.model, *l.tk, pool, samples->samples, EvalOptions{.configs = *cfgs});
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->records.size(), 3u * 2u);  // full, kvzip k=32, kvzip k=4096; two turns each
  const EvalRecord* full = &r->records[0];
  for (const EvalRecord& e : r->records) {
    if (e.policy == "full") {
      EXPECT_EQ(e.pass_tokens, 0);
      continue;
    }
    // Turn 1's pass reads the prompt after the instruction (BOS not repeated); turn 2's the
    // whole conversation of turn 1.
    const int64_t head = static_cast<int64_t>(
        runtime::continuation_ids(*l.tk, runtime::kKvzipRawHead).size());
    if (e.turn == 1) {
      EXPECT_EQ(e.pass_tokens, head + static_cast<int64_t>(s.prompt.size()) - 1);
    } else {
      EXPECT_GT(e.pass_tokens, head + static_cast<int64_t>(s.prompt.size()) - 1);
    }
    if (e.budget == 4096) {
      const EvalRecord& f = full[e.turn - 1];
      EXPECT_EQ(e.answer, f.answer) << "turn " << e.turn;
      // Its rows sit elsewhere in the forward calls than full's once it runs on its own (after
      // its first pass): the same bits all the same (eval/invariant_forward.h).
      EXPECT_EQ(e.answer_nll, f.answer_nll) << "turn " << e.turn;
      EXPECT_EQ(e.prompt_tokens, f.prompt_tokens);
    }
  }
  EXPECT_GT(r->pass_steps, 0);
}

// Under chunk:C the cut runs at each of the first prompt's chunk ends, each pass reading the
// instruction and the prompt fed so far (not its unread rest): its cost is the sum of those.
TEST(KvzipEval, ChunkedPrefillCutsAtEachChunkEnd) {
  TOVA_REQUIRE_SHARED();
  Loaded l = load();
  auto samples = make_samples(*l.tk, {.tasks = {"niah_single"}, .lengths = {400},
                                      .depths = {50}, .samples = 1, .max_new = 4});
  ASSERT_TRUE(samples.ok()) << samples.message();
  const int64_t n_prompt = static_cast<int64_t>(samples->samples[0].prompt.size());
  auto cfgs = sweep_configs(std::vector<std::string>{"kvzip"}, std::vector<int>{32}, 1 << 30);
  ASSERT_TRUE(cfgs.ok());
  auto prefill = parse_prefill("chunk:64");
  ASSERT_TRUE(prefill.ok());
  ThreadPool pool(2);
  auto r = run_eval(*l.model, *l.tk, pool, samples->samples,
                    EvalOptions{.configs = *cfgs, .prefill = *prefill});
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->records.size(), 1u);
  const int64_t head =
      static_cast<int64_t>(runtime::continuation_ids(*l.tk, runtime::kKvzipRawHead).size());
  int64_t want = 0;
  for (int64_t fed = 64;; fed += 64) {
    want += head + std::min(fed, n_prompt) - 1;  // BOS not repeated
    if (fed >= n_prompt) break;
  }
  EXPECT_EQ(r->records[0].pass_tokens, want);
}

TEST(KvzipEval, SessionsRefuseIt) {
  TOVA_REQUIRE_SHARED();
  Loaded l = load();
  auto co = parse_cache_options("kvzip", 64);
  ASSERT_TRUE(co.ok()) << co.message();
  auto st = runtime::make_state(*l.model, *co, 16);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  EXPECT_NE(st.message().find("KV policy 'kvzip' evicts only in its scoring pass"),
            std::string::npos)
      << st.message();
}

// Llama-2's template trims each message and puts a space before the assistant's: the
// conversation it renders does not begin with the text fed (the answer prefix right after
// [/INST]), so the reconstruction prompt cannot follow it.
TEST(KvzipEval, ATemplateThatCannotRenderTheReconstructionIsOneError) {
  TOVA_REQUIRE_SHARED();
  Loaded l = load();
  auto chat = tok::ChatTemplate::by_name("llama2");
  ASSERT_TRUE(chat.ok());
  auto samples = make_samples(*l.tk, {.tasks = {"niah_single"}, .lengths = {400},
                                      .depths = {50}, .samples = 1, .max_new = 4, .chat = *chat});
  ASSERT_TRUE(samples.ok()) << samples.message();
  auto cfgs = sweep_configs(std::vector<std::string>{"kvzip"}, std::vector<int>{32}, 1 << 30);
  ASSERT_TRUE(cfgs.ok());
  ThreadPool pool(2);
  auto r = run_eval(*l.model, *l.tk, pool, samples->samples,
                    EvalOptions{.configs = *cfgs, .chat = *chat});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message().find('\n'), std::string::npos);
  EXPECT_NE(r.message().find("chat template 'llama2' cannot render kvzip's reconstruction prompt"),
            std::string::npos)
      << r.message();
  // With a template that keeps the conversation as fed (ChatML), it runs.
  auto chatml = tok::ChatTemplate::by_name("chatml");
  ASSERT_TRUE(chatml.ok());
  auto ok_samples = make_samples(*l.tk, {.tasks = {"niah_single"}, .lengths = {400},
                                         .depths = {50}, .samples = 1, .max_new = 4,
                                         .chat = *chatml});
  ASSERT_TRUE(ok_samples.ok()) << ok_samples.message();
  auto ok = run_eval(*l.model, *l.tk, pool, ok_samples->samples,
                     EvalOptions{.configs = *cfgs, .chat = *chatml});
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_GT(ok->records[0].pass_tokens, 0);
}

}  // namespace
}  // namespace tova::eval
