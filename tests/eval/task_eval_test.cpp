// tova eval's library: RULER's tasks built from a seed and fitted to a length in tokens, the
// string-match score, and the runner: the same records with 1 or 2 threads, batched or each
// configuration alone, riding along or not; a budget past the length equals full. (The
// retrieval model's accuracy: CliEval.EvalNiah13mAsWritten.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "eval/task_eval.h"
#include "eval/task_report.h"
#include "eval/task_samples.h"
#include "eval/tasks.h"
#include "eval/logits.h"
#include "eval/nll.h"
#include "eval/ppl_sweep.h"
#include "kv/policy_registry.h"
#include "runtime/cache_options.h"
#include "test_data.h"

namespace tova::eval {
namespace {

using testing::shared_path;

struct LoadedTask {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tok::Tokenizer> tk;
};

LoadedTask load_task(const std::string& rel) {
  LoadedTask l;
  auto m = model::Model::load(shared_path(rel));
  EXPECT_TRUE(m.ok()) << m.message();
  l.model = std::move(m).value();
  auto t = tok::Tokenizer::from_gguf(l.model->file());
  EXPECT_TRUE(t.ok()) << t.message();
  l.tk = std::move(t).value();
  return l;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Tasks, StringMatchAllIsRulers) {
  EXPECT_EQ(string_match_all(" 1234567.", {"1234567"}), 1.0);
  EXPECT_EQ(string_match_all("the ANSWER is Foo", {"foo", "bar"}), 0.5);
  EXPECT_EQ(string_match_all("", {"x"}), 0.0);
  EXPECT_EQ(clean_answer("  a\nb\tc  "), "abc");
}

TEST(Tasks, TemplatesAreDataAndBadOnesAreOneClearError) {
  auto t = parse_needle_template(read(shared_path("models/niah-13m.templates.json")), "t.json");
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->needle, "The special magic number for {key} is {value}.");
  EXPECT_EQ(t->value.min_digits, 5);
  EXPECT_EQ(t->value.max_digits, 7);
  EXPECT_EQ(t->separator, " ");
  auto err = [](const std::string& json) {
    auto r = parse_needle_template(json, "bad.json");
    EXPECT_FALSE(r.ok()) << json;
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
    return r.ok() ? std::string() : r.message();
  };
  EXPECT_NE(err("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(R"({"needle": "{key} {value}", "question": "{key}?"})").find("answer_prefix"),
            std::string::npos);
  EXPECT_NE(err(R"({"needle": "x", "question": "{key}?", "answer_prefix": "a"})").find("needle"),
            std::string::npos);
  EXPECT_NE(err(R"({"needle": "{key}{value}", "question": "q", "answer_prefix": "a",
                    "colour": "red"})")
                .find("unknown field 'colour'"),
            std::string::npos);
  EXPECT_NE(err(R"({"needle": "{key}{value}", "question": "{key}", "answer_prefix": "a",
                    "value": "many digits"})")
                .find("not a key or value kind"),
            std::string::npos);
}

TEST(Tasks, EveryTaskFitsItsLengthAndIsReproducible) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  std::vector<std::string> names;
  for (const TaskInfo& t : all_tasks()) names.push_back(t.name);
  SampleOptions o{.tasks = names, .lengths = {1400, 2000}, .depths = {0, 100}, .samples = 2};
  auto a = make_samples(*l.tk, o);
  ASSERT_TRUE(a.ok()) << a.message();
  auto b = make_samples(*l.tk, o);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(a->samples.size(), b->samples.size());
  std::set<std::string> seen;
  for (size_t i = 0; i < a->samples.size(); ++i) {
    const TaskSample& s = a->samples[i];
    SCOPED_TRACE(s.task + " " + std::to_string(s.length));
    seen.insert(s.task);
    EXPECT_EQ(s.prompt_hash, b->samples[i].prompt_hash);  // the seed decides everything
    const int n = static_cast<int>(s.prompt.size());
    EXPECT_LE(n + s.max_new, s.length);
    // RULER's sizing: as large as fits (a unit of haystack or a few words more would not).
    EXPECT_GT(n + s.max_new, s.length * 0.8) << s.prompt_text.substr(0, 200);
    EXPECT_FALSE(s.expected.empty());
    EXPECT_EQ(s.prompt.front(), l.tk->bos());
    if (s.depth >= 0) {
      ASSERT_GE(s.needle_token, 0);
      EXPECT_LT(s.needle_token, n);
    }
    // Every answer is in the text (the needle, the chain's names, the words).
    for (const std::string& e : s.expected) EXPECT_NE(s.prompt_text.find(e), std::string::npos) << e;
  }
  EXPECT_EQ(seen.size(), all_tasks().size());
  // The asked needle sits at its depth: near the start at 0 %, near the end at 100 %.
  for (const TaskSample& s : a->samples) {
    if (s.task != "niah_single" || s.length != 2000) continue;
    if (s.depth == 0) {
      EXPECT_LT(s.needle_token, 150);  // after RULER's preamble
    } else {
      EXPECT_GT(s.needle_token, 2000 - 128 - 250);  // before the question
    }
  }
  // Another seed, other samples.
  o.seed = 7;
  auto c = make_samples(*l.tk, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->samples[0].prompt_hash, a->samples[0].prompt_hash);
}

TEST(Tasks, BadInputIsOneClearError) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  auto err = [&](const SampleOptions& o) {
    auto r = make_samples(*l.tk, o);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
    return r.ok() ? std::string() : r.message();
  };
  EXPECT_NE(err({.tasks = {"niah_sngle"}, .lengths = {512}}).find("unknown task 'niah_sngle' (valid: cwe"),
            std::string::npos);
  EXPECT_NE(err({.tasks = {"niah_single"}, .lengths = {100}}).find("too short for task"),
            std::string::npos);
  EXPECT_NE(err({.tasks = {"vt"}, .lengths = {512}, .custom = ruler_needle_template(true)})
                .find("needle template replaces"),
            std::string::npos);
  EXPECT_NE(err({.tasks = {"passkey"}, .lengths = {512}, .depths = {120}}).find("depth 120"),
            std::string::npos);
}

TEST(Tasks, AShortHaystackFileIsRepeatedWithAWarning) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  auto h = file_haystack("Tom has a red ball. It is round!  Lily smiles?", "tiny.txt");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->units, (std::vector<std::string>{"Tom has a red ball.", "It is round!", "Lily smiles?"}));
  auto r = make_samples(*l.tk, {.tasks = {"niah_single"}, .lengths = {600}, .samples = 1,
                                .haystack = *h});
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("haystack 'tiny.txt' has 3 sentences"), std::string::npos);
  EXPECT_NE(r->warnings[0].find("repeated"), std::string::npos);
  EXPECT_FALSE(file_haystack(" \n\t ", "empty.txt").ok());
}

// A grid on stories260K (fast): every record, with any thread count, batched or alone, riding
// along or not, is the same; a budget past the length gives full's records.
// Riding along, when asked for, must have happened (else "no sharing" compares a run with
// itself).
std::vector<EvalRecord> run(const LoadedTask& l, const std::vector<TaskSample>& samples,
                            const std::vector<kv::PolicySpec>& cfgs, int threads, bool batched,
                            bool share) {
  ThreadPool pool(threads);
  EvalOptions o{.configs = cfgs, .batched = batched, .share_prefix = share};
  auto r = run_eval(*l.model, *l.tk, pool, samples, o);
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return {};
  if (batched && share) {
    EXPECT_GT(r->shared_steps, 0);
  } else {
    EXPECT_EQ(r->shared_steps, 0);
  }
  return r->records;
}

void expect_same(const std::vector<EvalRecord>& a, const std::vector<EvalRecord>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(what + ": " + a[i].policy + " k=" + std::to_string(a[i].budget) + " " +
                 a[i].task + " sample " + std::to_string(a[i].sample));
    EXPECT_EQ(a[i].policy, b[i].policy);
    EXPECT_EQ(a[i].prompt_hash, b[i].prompt_hash);
    EXPECT_EQ(a[i].answer, b[i].answer);
    EXPECT_EQ(a[i].score, b[i].score);
    EXPECT_EQ(a[i].n_generated, b[i].n_generated);
  }
}

TEST(TaskEval, RecordsDoNotDependOnThreadsBatchingOrSharing) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  // 448 tokens under a budget of 24: every bounded policy evicts through most of each prompt.
  // (800 tokens asserted nothing more and took 40 s under the sanitizers. vt needs 710 tokens
  // and the runner does not depend on the task: multi-value, scored in parts, replaces it.)
  auto samples = make_samples(*l.tk, {.tasks = {"niah_single", "niah_multivalue"},
                                      .lengths = {448},
                                      .depths = {50},
                                      .samples = 1,
                                      .max_new = 12});
  ASSERT_TRUE(samples.ok()) << samples.message();
  // Every registered policy (the registry's example forms), so that a new one is covered.
  std::vector<std::string> pol = {"full"};
  for (const std::string& p : kv::all_policy_examples()) {
    if (p != "full") pol.push_back(p);
  }
  auto cfgs = sweep_configs(pol, std::vector<int>{24}, 1 << 30);
  ASSERT_TRUE(cfgs.ok()) << cfgs.message();
  const auto base = run(l, samples->samples, *cfgs, 2, true, true);
  EXPECT_EQ(base.size(), samples->samples.size() * cfgs->size());  // every cell has a record
  for (const EvalRecord& r : base) EXPECT_GT(r.prompt_tokens, 10 * 24) << r.task;
  // Every (task, policy, budget) has its cell and its row in the task's table.
  EXPECT_EQ(accuracy_cells(base).size(), 2 * cfgs->size());
  const std::string md = accuracy_markdown(base);
  for (const EvalRecord& r : base) {
    const std::string row = "| " + r.policy + " | " +
                            (r.budget < 0 ? std::string("-") : std::to_string(r.budget)) + " |";
    EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
  }
  expect_same(base, run(l, samples->samples, *cfgs, 1, true, true), "1 thread");
  expect_same(base, run(l, samples->samples, *cfgs, 2, false, true), "each alone");
  expect_same(base, run(l, samples->samples, *cfgs, 2, true, false), "no sharing");
}

TEST(TaskEval, ABudgetPastTheLengthEqualsFull) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  auto samples = make_samples(*l.tk, {.tasks = {"niah_single"}, .lengths = {300}, .depths = {25},
                                      .samples = 2, .max_new = 8});
  ASSERT_TRUE(samples.ok());
  std::vector<std::string> pol = {"full"};
  for (const std::string& p : kv::all_policy_examples()) {
    if (p != "full") pol.push_back(p);
  }
  auto cfgs = sweep_configs(pol, std::vector<int>{1000}, 1 << 30);
  ASSERT_TRUE(cfgs.ok()) << cfgs.message();
  const auto r = run(l, samples->samples, *cfgs, 2, true, true);
  const size_t n_cfg = cfgs->size();
  for (size_t i = 0; i < r.size(); ++i) {
    const EvalRecord& full = r[i - i % n_cfg];
    EXPECT_EQ(r[i].answer, full.answer) << r[i].policy;
    EXPECT_EQ(r[i].n_generated, full.n_generated) << r[i].policy;
  }
}


// --turns: one context, several questions in successive turns of one conversation. The samples:
// each later question asks another needle of the same haystack (niah_multikey), or another
// chain (vt), in the seed's order; the first is the single-turn question.
TEST(Tasks, TurnsAskTheOtherNeedlesOfOneContext) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  auto one = make_samples(*l.tk, {.tasks = {"niah_multikey"}, .lengths = {700}, .depths = {50},
                                  .samples = 2, .max_new = 8});
  auto three = make_samples(*l.tk, {.tasks = {"niah_multikey"}, .lengths = {700}, .depths = {50},
                                    .samples = 2, .max_new = 8, .turns = 3});
  ASSERT_TRUE(one.ok() && three.ok()) << three.message();
  for (size_t i = 0; i < three->samples.size(); ++i) {
    const TaskSample& s = three->samples[i];
    ASSERT_EQ(s.more.size(), 2u);
    EXPECT_TRUE(one->samples[i].more.empty());
    // The first question is the single-turn one (same key and value).
    EXPECT_EQ(s.expected, one->samples[i].expected);
    std::set<std::string> asked = {s.expected[0]};
    int64_t extra = 0;
    for (const SampleTurn& t : s.more) {
      ASSERT_EQ(t.expected.size(), 1u);
      EXPECT_TRUE(asked.insert(t.expected[0]).second) << "asked twice: " << t.expected[0];
      EXPECT_NE(s.prompt_text.find(t.expected[0]), std::string::npos);  // its needle is there
      EXPECT_FALSE(t.ids.empty());
      EXPECT_FALSE(t.answer_ids.empty());
      EXPECT_EQ(t.text.rfind("\nWhat is the special magic number for ", 0), 0u)
          << t.text;  // the separator, then the question
      extra += static_cast<int64_t>(t.ids.size());
    }
    // The whole conversation fits the length: prompt, later questions, every answer.
    EXPECT_LE(static_cast<int64_t>(s.prompt.size()) + extra + 3 * s.max_new, s.length);
  }
  // vt asks one chain per turn; every chain's variables are in the text.
  auto vt = make_samples(*l.tk, {.tasks = {"vt"}, .lengths = {1200}, .samples = 1, .max_new = 8,
                                 .turns = 2});
  ASSERT_TRUE(vt.ok()) << vt.message();
  ASSERT_EQ(vt->samples[0].more.size(), 1u);
  for (const std::string& v : vt->samples[0].more[0].expected) {
    EXPECT_NE(vt->samples[0].prompt_text.find("VAR " + v + " = "), std::string::npos) << v;
  }
  EXPECT_NE(vt->samples[0].expected, vt->samples[0].more[0].expected);
  // One chain (turns 1) is the task as before: the same sample as without the option.
  auto vt1 = make_samples(*l.tk, {.tasks = {"vt"}, .lengths = {1200}, .samples = 1, .max_new = 8});
  auto vt1b = make_samples(*l.tk, {.tasks = {"vt"}, .lengths = {1200}, .samples = 1, .max_new = 8,
                                   .turns = 1});
  ASSERT_TRUE(vt1.ok() && vt1b.ok());
  EXPECT_EQ(vt1->samples[0].prompt_hash, vt1b->samples[0].prompt_hash);
}

TEST(Tasks, BadTurnsAreOneClearError) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  auto err = [&](const SampleOptions& o) {
    auto r = make_samples(*l.tk, o);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
    return r.ok() ? std::string() : r.message();
  };
  EXPECT_NE(err({.tasks = {"niah_multikey"}, .lengths = {700}, .turns = 0})
                .find("turns must be at least 1, got 0"),
            std::string::npos);
  EXPECT_NE(err({.tasks = {"niah_multikey"}, .lengths = {700}, .turns = 5})
                .find("turns 5: task 'niah_multikey' asks at most 4 questions of one context"),
            std::string::npos);
  EXPECT_NE(err({.tasks = {"niah_single"}, .lengths = {700}, .turns = 2})
                .find("task 'niah_single' asks at most 1 question of one context"),
            std::string::npos);
}

// A conversation per (sample, configuration): one record per turn, each carrying it; the same
// records with 1 or 2 threads, batched or alone, riding along or not; a budget past the length
// gives full's answers and their NLL, bit for bit, at every turn.
TEST(TaskEval, TurnsAreTheSameAloneBatchedAndOnAnyThreadCount) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  auto samples = make_samples(*l.tk, {.tasks = {"niah_multikey"}, .lengths = {760},
                                      .depths = {50}, .samples = 2, .max_new = 6, .turns = 3});
  ASSERT_TRUE(samples.ok()) << samples.message();
  auto cfgs = sweep_configs(std::vector<std::string>{"full", "window", "tova", "snapkv", "h2o", "kvzip"},
                            std::vector<int>{24}, 1 << 30);
  ASSERT_TRUE(cfgs.ok());
  const auto base = run(l, samples->samples, *cfgs, 2, true, true);
  ASSERT_EQ(base.size(), samples->samples.size() * cfgs->size() * 3);
  for (size_t i = 0; i < base.size(); ++i) {
    EXPECT_EQ(base[i].turn, 1 + static_cast<int>(i % 3));
    EXPECT_EQ(base[i].n_turns, 3);
    EXPECT_GT(base[i].answer_tokens, 0);
    EXPECT_TRUE(std::isfinite(base[i].answer_nll));
    EXPECT_GT(base[i].n_generated, 0);
  }
  // Each turn's prompt follows the previous turn's answer in one history.
  EXPECT_GT(base[1].prompt_tokens, base[0].prompt_tokens + base[0].n_generated);
  // The answers and their NLL are the same bits on any thread count, alone or batched, riding
  // along or not (every forward call is padded to the matmul's batch-invariant size:
  // eval/invariant_forward.h).
  auto same = [&](const std::vector<EvalRecord>& other, const std::string& what) {
    expect_same(base, other, what);
    ASSERT_EQ(base.size(), other.size());
    for (size_t i = 0; i < base.size(); ++i) {
      EXPECT_EQ(base[i].turn, other[i].turn) << what;
      EXPECT_EQ(base[i].prompt_tokens, other[i].prompt_tokens) << what;
      EXPECT_EQ(base[i].pass_tokens, other[i].pass_tokens) << what;
      EXPECT_EQ(base[i].answer_nll, other[i].answer_nll) << what << " record " << i;
      EXPECT_EQ(base[i].answer_tokens, other[i].answer_tokens) << what << " record " << i;
    }
    // The records as written (results.json, results.csv), byte for byte.
    EvalResult a, b;
    a.records = base;
    b.records = other;
    EXPECT_EQ(eval_json(a, {})["records"].dump(), eval_json(b, {})["records"].dump()) << what;
    EXPECT_EQ(eval_csv(a), eval_csv(b)) << what;
  };
  same(run(l, samples->samples, *cfgs, 1, true, true), "1 thread");
  same(run(l, samples->samples, *cfgs, 2, false, true), "each alone");
  same(run(l, samples->samples, *cfgs, 2, true, false), "no sharing");
  // k past the whole conversation: full's records, turn by turn, NLL bit for bit.
  auto big = sweep_configs(std::vector<std::string>{"full", "window", "tova", "snapkv", "h2o", "kvzip"},
                           std::vector<int>{4096}, 1 << 30);
  ASSERT_TRUE(big.ok());
  const auto r = run(l, samples->samples, *big, 2, true, true);
  const size_t per_sample = big->size() * 3;
  for (size_t i = 0; i < r.size(); ++i) {
    const EvalRecord& full = r[(i / per_sample) * per_sample + i % 3];
    ASSERT_EQ(full.policy, "full");
    EXPECT_EQ(r[i].answer, full.answer) << r[i].policy << " turn " << r[i].turn;
    EXPECT_EQ(r[i].answer_nll, full.answer_nll) << r[i].policy << " turn " << r[i].turn;
  }
  // The tables: accuracy per turn beside the pooled one, and the answers' NLL against full.
  const std::string md = accuracy_markdown(base);
  EXPECT_NE(md.find("### niah_multikey by turn"), std::string::npos) << md;
  EXPECT_NE(md.find("| turn 1 | turn 2 | turn 3 | all |"), std::string::npos) << md;
  EXPECT_NE(md.find("### niah_multikey: answer NLL"), std::string::npos) << md;
  EXPECT_EQ(turn_cells(base).size(), cfgs->size() * 3);
}

// The answer NLL is the expected answer's mean -log p fed after the prompt, computed here
// independently: the prompt and the answer through all_logits (one sequence, full cache).
TEST(TaskEval, AnswerNllIsTheTeacherForcedAnswer) {
  TOVA_REQUIRE_SHARED();
  LoadedTask l = load_task("models/stories260K.gguf");
  auto samples = make_samples(*l.tk, {.tasks = {"niah_single", "vt"}, .lengths = {720},
                                      .depths = {25}, .samples = 1, .max_new = 4});
  ASSERT_TRUE(samples.ok()) << samples.message();
  auto cfgs = sweep_configs(std::vector<std::string>{"full"}, std::vector<int>{}, 1 << 30);
  ASSERT_TRUE(cfgs.ok());
  const auto r = run(l, samples->samples, *cfgs, 2, true, false);
  ASSERT_EQ(r.size(), 2u);
  ThreadPool pool(2);
  const int n_vocab = l.model->config().n_vocab;
  for (size_t i = 0; i < r.size(); ++i) {
    const TaskSample& s = samples->samples[i];
    std::vector<int32_t> ids = s.prompt;
    ids.insert(ids.end(), s.answer_ids.begin(), s.answer_ids.end());
    auto co = parse_cache_options("full", 0);
    ASSERT_TRUE(co.ok());
    auto logits = all_logits(*l.model, pool, ids, *co, 64);
    ASSERT_TRUE(logits.ok()) << logits.message();
    std::vector<double> logp(n_vocab);
    double sum = 0;
    for (size_t j = 0; j < s.answer_ids.size(); ++j) {
      const size_t row = s.prompt.size() - 1 + j;
      log_softmax(std::span<const float>(&(*logits)[row * n_vocab], n_vocab), logp);
      sum -= logp[s.answer_ids[j]];
    }
    EXPECT_EQ(r[i].answer_tokens, static_cast<int>(s.answer_ids.size()));
    EXPECT_NEAR(r[i].answer_nll, sum / s.answer_ids.size(), 1e-5) << s.task;  // other batching
  }
}

// The paired difference against full, by hand: three samples.
TEST(TaskReport, NllCellsPairWithFull) {
  std::vector<EvalRecord> recs;
  const double full[] = {1.0, 2.0, 3.0}, window[] = {1.5, 2.0, 4.0};
  for (int i = 0; i < 3; ++i) {
    recs.push_back({.task = "t", .length = 100, .sample = i, .policy = "full", .budget = -1,
                    .answer_nll = full[i], .answer_tokens = 2});
  }
  for (int i = 0; i < 3; ++i) {
    recs.push_back({.task = "t", .length = 100, .sample = i, .policy = "window", .budget = 8,
                    .answer_nll = window[i], .answer_tokens = 2});
  }
  const auto cells = nll_cells(recs);
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].policy, "full");
  EXPECT_DOUBLE_EQ(cells[0].delta, 0.0);
  EXPECT_EQ(cells[1].n_pairs, 3);
  EXPECT_DOUBLE_EQ(cells[1].nll, 2.5);
  EXPECT_DOUBLE_EQ(cells[1].delta, 0.5);  // diffs 0.5, 0, 1
  EXPECT_NEAR(cells[1].delta_se, 0.5 / std::sqrt(3.0), 1e-12);  // sd 0.5
  const std::string md = accuracy_markdown(recs);
  EXPECT_NE(md.find("| window | 8 | 100 | 2.500 | +0.500 | 0.289 | 3 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace tova::eval
