// Speculative decoding (runtime/speculation.h) is exact: the tokens a session generates with
// speculation on are the tokens it generates without, under every policy of the registry, on
// every layer kind (the architecture fixtures: attention, sliding window, shared K/V, Gated
// DeltaNet) and every K/V type, greedy and sampled; drafts that are right, wrong and partly
// right all take the verify/accept/undo paths. Bad options are one line naming the flag (a
// draft model of another vocabulary: tests/cli/run_cli_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kv/policy_registry.h"
#include "runtime/engine_access.h"
#include "runtime/session_impl.h"
#include "runtime/speculation.h"
#include "test_data.h"
#include "tova/engine.h"
#include "tova/text_stream.h"

namespace tova {
namespace {

std::string arch_fixture(const std::string& name) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + name + "-f32.gguf";
}

const Engine& engine(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Engine>> engines;
  auto& e = engines[name];
  if (!e) {
    auto r = Engine::load({.model_path = arch_fixture(name), .n_threads = 2});
    EXPECT_TRUE(r.ok()) << r.message();
    e = std::move(*r);
  }
  return *e;
}

// Proposes the reference continuation, wrong where `wrong(i)` says (i: the index of the drafted
// token in the reference), so that some steps take every draft, some none, some a part.
class OracleDrafter : public runtime::Drafter {
 public:
  OracleDrafter(std::vector<int32_t> reference, size_t prompt_len, int n_vocab)
      : ref_(std::move(reference)), prompt_(prompt_len), n_vocab_(n_vocab) {}
  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) override {
    std::vector<int32_t> out;
    const size_t at = history.size();  // the reference index of the first drafted token
    ++calls_;
    for (int i = 0; i < n_max && at + i < ref_.size(); ++i) {
      const size_t k = at + i;
      const bool wrong = (k * 7 + calls_) % 5 == 0;
      out.push_back(wrong ? (ref_[k] + 1) % n_vocab_ : ref_[k]);
    }
    return out;
  }
  std::unique_ptr<runtime::Drafter> clone() const override {
    return std::make_unique<OracleDrafter>(*this);
  }

 private:
  std::vector<int32_t> ref_;  // prompt + generated
  size_t prompt_;
  int n_vocab_;
  size_t calls_ = 0;
};

struct GenRun {
  std::vector<int32_t> tokens;
  SpeculationStats spec;
  uint64_t kv_capacity = 0;  // SessionStats::kv_capacity at the end
};

GenRun generate(const Engine& e, const CacheOptions& cache, const SamplerParams& sampling,
                const std::vector<int32_t>& prompt, int n, const SpeculativeOptions& spec = {},
                std::unique_ptr<runtime::Drafter> drafter = nullptr) {
  SessionOptions so{.cache = cache, .sampling = sampling, .speculative = spec};
  auto s = e.new_session(so);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  if (drafter) {
    runtime::SessionAccess::impl(**s).spec =
        std::make_unique<runtime::Speculation>(spec, std::move(drafter));
  }
  (*s)->queue(prompt);
  TextStream ts(**s, {.max_tokens = n, .ignore_eos = true});
  while (!ts.done()) {
    auto p = ts.next();
    EXPECT_TRUE(p.ok()) << p.message();
    if (!p.ok()) break;
  }
  GenRun r;
  const auto& h = (*s)->history();
  r.tokens.assign(h.begin() + static_cast<long>(prompt.size()), h.end());
  if (ts.unfed() >= 0) r.tokens.push_back(ts.unfed());
  r.spec = (*s)->stats().speculation;
  r.kv_capacity = (*s)->stats().kv_capacity;
  EXPECT_EQ((*s)->n_seen(), static_cast<int64_t>(h.size()));
  return r;
}

std::vector<int32_t> prompt_of(const Engine& e) {
  return e.tokenize("Once upon a time there was a little girl. Once upon a time", true);
}

CacheOptions cache_of(const std::string& policy, int budget, kv::KvType t = kv::KvType::kF32) {
  auto c = parse_cache_options(policy, budget, "exact", tova::kv_type_name(t));
  EXPECT_TRUE(c.ok()) << c.message();
  return *c;
}

// Greedy with speculation (oracle drafts, right and wrong) equals greedy without it.
void expect_exact(const std::string& fixture, const std::string& policy, int budget, kv::KvType t,
                  int n = 40) {
  SCOPED_TRACE(fixture + " " + policy + " " + std::string(tova::kv_type_name(t)));
  const Engine& e = engine(fixture);
  const CacheOptions c = cache_of(policy, budget, t);
  const std::vector<int32_t> prompt = prompt_of(e);
  const SamplerParams greedy{.temp = 0};
  const GenRun plain = generate(e, c, greedy, prompt, n);
  ASSERT_EQ(plain.tokens.size(), static_cast<size_t>(n));
  std::vector<int32_t> ref = prompt;
  ref.insert(ref.end(), plain.tokens.begin(), plain.tokens.end());
  const SpeculativeOptions so{.type = "ngram-simple", .n_max = 5};
  const GenRun spec = generate(e, c, greedy, prompt, n, so,
                               std::make_unique<OracleDrafter>(ref, prompt.size(), e.n_vocab()));
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.spec.n_accepted, 0);
  EXPECT_LT(spec.spec.n_accepted, spec.spec.n_drafted);  // some drafts were rejected
}

// Every policy of the registry, bounded below the length so that it evicts inside verify
// steps, on a model of each layer kind.
class SpecExact : public ::testing::TestWithParam<std::string> {};

TEST_P(SpecExact, GreedyEqualsWithoutSpeculationUnderEveryPolicy) {
  TOVA_REQUIRE_SHARED();
  for (const std::string& policy : kv::all_policy_examples()) {
    expect_exact(GetParam(), policy, 12, kv::KvType::kF32);
  }
}

TEST_P(SpecExact, GreedyEqualsWithoutSpeculationUnderEveryKvType) {
  TOVA_REQUIRE_SHARED();
  for (int t = 0; t < tova::kKvTypeCount; ++t) {
    expect_exact(GetParam(), "h2o", 12, static_cast<kv::KvType>(t));
  }
}

// llama3: attention; gemma3: sliding-window layers; gemma4e: shared-K/V layers; qwen35: Gated
// DeltaNet recurrent layers (their conv and delta states undone on rejection); lfm2: short
// convolutions (conv states); granitehybrid: Mamba2 (conv and SSM states); nemotron_h: Mamba2,
// attention and feed-forward layers that hold nothing; qwen3next: Gated DeltaNet with grouped
// value heads and fused projections, behind a mixture; falcon-h1: attention beside Mamba2 in
// every layer (K/V and conv and SSM states in one layer).
INSTANTIATE_TEST_SUITE_P(LayerKinds, SpecExact,
                         ::testing::Values("llama3", "gemma3", "gemma4e", "qwen35", "lfm2",
                                           "granitehybrid", "nemotron_h", "qwen3next",
                                           "falcon-h1"));

// With sampling the sampler draws the same numbers in the same order: the same text.
TEST(Speculation, SampledTextEqualsWithoutSpeculation) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("llama3");
  const CacheOptions c = cache_of("tova", 16);
  const std::vector<int32_t> prompt = prompt_of(e);
  const SamplerParams sampled{.temp = 0.9f, .top_k = 0, .top_p = 1.f, .min_p = 0.f, .seed = 7};
  const GenRun plain = generate(e, c, sampled, prompt, 40);
  std::vector<int32_t> ref = prompt;
  ref.insert(ref.end(), plain.tokens.begin(), plain.tokens.end());
  const SpeculativeOptions so{.type = "ngram-simple", .n_max = 4};
  const GenRun spec = generate(e, c, sampled, prompt, 40, so,
                               std::make_unique<OracleDrafter>(ref, prompt.size(), e.n_vocab()));
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.spec.n_accepted, 0);
}

// ngram-simple as registered: exact, and on a repetitive continuation it drafts and hits.
TEST(Speculation, NgramSimpleIsExactAndDrafts) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("llama3");
  std::vector<int32_t> prompt;
  const std::vector<int32_t> piece = prompt_of(e);
  for (int i = 0; i < 4; ++i) prompt.insert(prompt.end(), piece.begin() + 1, piece.end());
  const CacheOptions c = cache_of("full", 0);
  const SamplerParams greedy{.temp = 0};
  const GenRun plain = generate(e, c, greedy, prompt, 48);
  const SpeculativeOptions so{
      .type = "ngram-simple", .n_max = 8, .ngram_size_n = 2, .ngram_size_m = 8};
  const GenRun spec = generate(e, c, greedy, prompt, 48, so);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.spec.n_steps, 0);
}

// n tokens generated after what the session holds: those it queued and fed, then the last one
// (sampled, not queued: TextStream::unfed).
std::vector<int32_t> continue_for(Session& s, int n, int32_t* unfed) {
  const size_t before = s.history().size();
  TextStream ts(s, {.max_tokens = n, .ignore_eos = true});
  while (!ts.done()) {
    auto p = ts.next();
    EXPECT_TRUE(p.ok()) << p.message();
    if (!p.ok()) break;
  }
  std::vector<int32_t> out(s.history().begin() + static_cast<long>(before), s.history().end());
  out.push_back(ts.unfed());
  *unfed = ts.unfed();
  return out;
}

// A session cloned and saved while drafts of a verify step are outstanding (each settles them
// first) continues exactly as decoding without speculation does; so do its clone and its file.
TEST(Speculation, ClonesAndSessionFilesMidSpeculationStayExact) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("qwen35");  // DeltaNet states and K/V, both undone and saved
  const CacheOptions c = cache_of("h2o", 12);
  const std::vector<int32_t> prompt = prompt_of(e);
  const SamplerParams greedy{.temp = 0};
  const GenRun plain = generate(e, c, greedy, prompt, 41);
  std::vector<int32_t> ref = prompt;
  ref.insert(ref.end(), plain.tokens.begin(), plain.tokens.end());
  const SpeculativeOptions so{.type = "ngram-simple", .n_max = 6};
  int n_outstanding = 0;  // splits that left drafts outstanding (the settling path)
  for (int split = 16; split <= 24; ++split) {
    SCOPED_TRACE(split);
    const std::vector<int32_t> head(plain.tokens.begin(), plain.tokens.begin() + split);
    const std::vector<int32_t> tail(plain.tokens.begin() + split, plain.tokens.end());
    auto s = e.new_session({.cache = c, .sampling = greedy, .speculative = so});
    ASSERT_TRUE(s.ok()) << s.message();
    runtime::SessionAccess::impl(**s).spec = std::make_unique<runtime::Speculation>(
        so, std::make_unique<OracleDrafter>(ref, prompt.size(), e.n_vocab()));
    (*s)->queue(prompt);
    int32_t unfed = -1;
    EXPECT_EQ(continue_for(**s, split, &unfed), head);
    n_outstanding += runtime::SessionAccess::impl(**s).spec->n_outstanding() > 0;
    EXPECT_EQ((*s)->n_seen(), static_cast<int64_t>((*s)->history().size()));
    std::unique_ptr<Session> copy = (*s)->clone();
    const std::string path = ::testing::TempDir() + "/spec_mid.session";
    auto saved = (*s)->save(path, {.unfed = unfed});
    ASSERT_TRUE(saved.ok()) << saved.message();
    const int n = 41 - split;
    int32_t u = -1;
    (*s)->queue(unfed);
    EXPECT_EQ(continue_for(**s, n, &u), tail);
    copy->queue(unfed);
    EXPECT_EQ(continue_for(*copy, n, &u), tail);
    auto loaded = e.load_session(path, {.cache = c, .sampling = greedy, .speculative = so});
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    EXPECT_EQ(continue_for(*loaded->session, n, &u), tail);  // ngram-simple drafts on it
  }
  EXPECT_GT(n_outstanding, 0);
}

// draft-mtp as registered, on the hybrid fixtures with a prediction block (Gated DeltaNet and
// attention; dense and MoE feed-forward): greedy output equals greedy output without it under
// `full` and a bounded policy, and the block drafts (p_min 0: every chance). Its drafts on
// random weights are rarely right: the verify steps take the undo path nearly every time.
TEST(Speculation, DraftMtpIsExact) {
  TOVA_REQUIRE_SHARED();
  for (const std::string fixture : {"qwen35-mtp", "qwen35moe-mtp", "qwen3next-mtp"}) {
    const Engine& e = engine(fixture);
    const std::vector<int32_t> prompt = prompt_of(e);
    const SamplerParams greedy{.temp = 0};
    for (const auto& [policy, k] : {std::pair<std::string, int>{"full", 0}, {"tova", 12}}) {
      SCOPED_TRACE(fixture + " " + policy);
      const CacheOptions c = cache_of(policy, k);
      const GenRun plain = generate(e, c, greedy, prompt, 32);
      const SpeculativeOptions so{.type = "draft-mtp", .n_max = 3, .p_min = 0.f};
      const GenRun spec = generate(e, c, greedy, prompt, 32, so);
      EXPECT_EQ(spec.tokens, plain.tokens);
      EXPECT_GT(spec.spec.n_drafted, 0);
      std::printf("%s %s: %lld verify steps, %lld drafted, %lld accepted\n", fixture.c_str(),
                  policy.c_str(), static_cast<long long>(spec.spec.n_steps),
                  static_cast<long long>(spec.spec.n_drafted),
                  static_cast<long long>(spec.spec.n_accepted));
    }
  }
}

// Proposes the oracle's drafts (so that verify steps accept, reject and leave tokens to re-feed)
// while the MTP drafter runs beside it on the same hidden rows; records what the MTP drafter
// proposed after each history.
class MtpBeside : public runtime::Drafter {
 public:
  MtpBeside(std::unique_ptr<runtime::Drafter> oracle, std::unique_ptr<runtime::Drafter> mtp,
            std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>* log)
      : oracle_(std::move(oracle)), mtp_(std::move(mtp)), log_(log) {}
  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) override {
    TOVA_ASSIGN_OR_RETURN(std::vector<int32_t> m, mtp_->draft(history, 3));
    log_->emplace_back(std::vector<int32_t>(history.begin(), history.end()), std::move(m));
    return oracle_->draft(history, n_max);
  }
  std::unique_ptr<runtime::Drafter> clone() const override { return nullptr; }
  bool wants_hidden() const override { return true; }
  void observe(int64_t pos, std::span<const int32_t> tokens, const float* hidden) override {
    mtp_->observe(pos, tokens, hidden);
  }

 private:
  std::unique_ptr<runtime::Drafter> oracle_, mtp_;
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>* log_;
};

// The block's drafts depend on the history alone: inside a session whose verify steps accept,
// reject and re-feed (hidden rows of undone passes, the block synced across undos, started
// again nowhere), each draft equals the one a fresh drafter makes after the same history fed
// one token at a time (F32: a verify step's rows are a single step's bits).
TEST(Speculation, DraftMtpDraftsDependOnTheHistoryAlone) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("qwen35-mtp");
  const CacheOptions c = cache_of("tova", 12);
  const std::vector<int32_t> prompt = prompt_of(e);
  const SamplerParams greedy{.temp = 0};
  const GenRun plain = generate(e, c, greedy, prompt, 30);
  std::vector<int32_t> ref = prompt;
  ref.insert(ref.end(), plain.tokens.begin(), plain.tokens.end());
  const SpeculativeOptions so{.type = "draft-mtp", .n_max = 4, .p_min = 0.f};
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> log;
  auto mtp = runtime::make_mtp_drafter(e, so, c);
  ASSERT_TRUE(mtp.ok()) << mtp.message();
  const GenRun spec = generate(
      e, c, greedy, prompt, 30, so,
      std::make_unique<MtpBeside>(std::make_unique<OracleDrafter>(ref, prompt.size(), e.n_vocab()),
                                  std::move(*mtp), &log));
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.spec.n_accepted, 0);
  EXPECT_LT(spec.spec.n_accepted, spec.spec.n_drafted);
  ASSERT_GT(log.size(), 4u);
  for (const auto& [history, drafted] : log) {
    SCOPED_TRACE(history.size());
    auto fresh = runtime::make_mtp_drafter(e, so, c);
    ASSERT_TRUE(fresh.ok());
    auto state = runtime::make_state(EngineAccess::model(e), c, 0);
    ASSERT_TRUE(state.ok());
    model::ForwardScratch scratch;
    std::vector<float> logits(e.n_vocab()), hidden(EngineAccess::model(e).config().n_embd);
    for (size_t p = 0; p + 1 < history.size(); ++p) {
      const model::BatchToken t{.token = history[p], .state = state->get(), .logits = true};
      ASSERT_TRUE(
          EngineAccess::model(e).forward(std::span(&t, 1), EngineAccess::pool(e), scratch, logits.data(), {}, hidden.data())
              .ok());
      (*fresh)->observe(static_cast<int64_t>(p), std::span(&history[p], 1), hidden.data());
    }
    auto want = (*fresh)->draft(history, 3);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(drafted, *want);
    EXPECT_FALSE(drafted.empty());
  }
}

// The prediction block's own K/V is memory the session holds: counted in kv_capacity (as
// draft_kv_bytes) and reserved beside the session's by Engine::reserve_bytes (what a server's
// admission and --kv-memory check read); bounded by the same budget as the session's layers.
TEST(Speculation, DraftMtpKvIsCountedAndReserved) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("qwen35-mtp");
  const std::vector<int32_t> prompt = prompt_of(e);
  const SamplerParams greedy{.temp = 0};
  const SpeculativeOptions so{.type = "draft-mtp", .n_max = 3, .p_min = 0.f};
  for (const auto& [policy, k] : {std::pair<std::string, int>{"full", 0}, {"tova", 12}}) {
    SCOPED_TRACE(policy);
    const CacheOptions c = cache_of(policy, k);
    const GenRun plain = generate(e, c, greedy, prompt, 24);
    const GenRun spec = generate(e, c, greedy, prompt, 24, so);
    ASSERT_EQ(spec.tokens, plain.tokens);
    EXPECT_GT(spec.spec.draft_kv_bytes, 0u);
    EXPECT_EQ(plain.spec.draft_kv_bytes, 0u);
    const int64_t n = 512;  // a server's -c: what a `full` state may reach
    const uint64_t alone = e.reserve_bytes(c, static_cast<int64_t>(prompt.size()), n);
    const uint64_t with = e.reserve_bytes(c, static_cast<int64_t>(prompt.size()), n, so);
    EXPECT_GT(with, alone);
    EXPECT_LE(spec.spec.draft_kv_bytes, with - alone);
    // The main state's bytes are the plain run's (a pool's size depends on what it holds).
    EXPECT_EQ(spec.kv_capacity - spec.spec.draft_kv_bytes, plain.kv_capacity);
    EXPECT_EQ(e.reserve_bytes(c, 4, n, {.type = "ngram-simple"}), e.reserve_bytes(c, 4, n));
  }
}

// draft-mtp on a file without a prediction block: one line naming the file.
TEST(Speculation, DraftMtpWithoutABlockIsOneLine) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("llama3");
  auto s = e.new_session({.cache = cache_of("full", 0), .speculative = {.type = "draft-mtp"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has no multi-token prediction block"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("llama3-f32.gguf"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

// The n-gram lookup as llama.cpp's common_ngram_simple_draft computes it, on a hand-made
// history: the latest earlier occurrence of the last size_n tokens, what followed it.
TEST(Speculation, NgramSimpleLooksUpTheLatestEarlierOccurrence) {
  SpeculativeOptions o{.type = "ngram-simple", .ngram_size_n = 2, .ngram_size_m = 3};
  auto d = runtime::make_ngram_simple(o);
  //                             0  1  2  3  4  5  6  7  8  9 10 11
  const std::vector<int32_t> h = {9, 1, 2, 3, 4, 1, 2, 7, 8, 6, 1, 2};
  auto r = d->draft(h, 16);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int32_t>{7, 8, 6}));  // (1, 2) at 5, not at 1: the latest
  r = d->draft(h, 2);
  EXPECT_EQ(*r, (std::vector<int32_t>{7, 8}));  // at most n_max
  const std::vector<int32_t> none = {9, 1, 2, 3, 4, 5, 6, 7, 8, 6, 1, 3};
  EXPECT_TRUE(d->draft(none, 16)->empty());
}

// ngram-mod's chained lookups (llama.cpp's common_ngram_mod) on a hand-made history, n_match 2:
// the table holds (5,6)->7, (6,7)->8, (7,8)->5, (8,5)->6 from the fed tokens; the draft slides
// its window over what it drafts.
TEST(Speculation, NgramModChainsTableLookups) {
  auto d = runtime::make_ngram_mod({.type = "ngram-mod", .ngram_mod_n_match = 2});
  const std::vector<int32_t> h = {5, 6, 7, 8, 5, 6, 7, 8, 5, 6};
  auto r = d->draft(h, 6);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int32_t>{7, 8, 5, 6, 7, 8}));
  const std::vector<int32_t> miss = {5, 6, 7, 8, 5, 6, 7, 8, 5, 9};  // (5, 9) never seen
  auto d2 = runtime::make_ngram_mod({.type = "ngram-mod", .ngram_mod_n_match = 2});
  EXPECT_TRUE(d2->draft(miss, 6)->empty());
}

// ngram-mod as registered: exact, and on a repetitive prompt it drafts and hits.
TEST(Speculation, NgramModIsExactAndDrafts) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("llama3");
  std::vector<int32_t> prompt;
  const std::vector<int32_t> piece = prompt_of(e);
  for (int i = 0; i < 4; ++i) prompt.insert(prompt.end(), piece.begin() + 1, piece.end());
  for (const auto& [policy, k] : {std::pair<std::string, int>{"full", 0}, {"tova", 16}}) {
    SCOPED_TRACE(policy);
    const CacheOptions c = cache_of(policy, k);
    const SamplerParams greedy{.temp = 0};
    // The generated text's n-grams join the table after 32 new tokens: long enough to loop.
    const GenRun plain = generate(e, c, greedy, prompt, 96);
    const SpeculativeOptions so{.type = "ngram-mod", .n_max = 8, .ngram_mod_n_match = 2};
    const GenRun spec = generate(e, c, greedy, prompt, 96, so);
    EXPECT_EQ(spec.tokens, plain.tokens);
    EXPECT_GT(spec.spec.n_drafted, 0);
  }
}

// With sampling, the text is the one decoding without speculation gives, seed for seed:
// 24 seeds x 3 policies, oracle drafts (right, wrong, partly right) and ngram-mod's.
TEST(Speculation, SampledTextEqualsWithoutSpeculationSeedForSeed) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("llama3");
  const std::vector<int32_t> prompt = prompt_of(e);
  for (const auto& [policy, k] :
       {std::pair<std::string, int>{"full", 0}, {"tova", 12}, {"h2o", 12}}) {
    const CacheOptions c = cache_of(policy, k);
    for (uint64_t seed = 1; seed <= 24; ++seed) {
      SCOPED_TRACE(policy + " seed " + std::to_string(seed));
      const SamplerParams sampled{.temp = 1.0f, .top_k = 8, .top_p = 1.f, .min_p = 0.f,
                                  .seed = seed};
      const GenRun plain = generate(e, c, sampled, prompt, 16);
      std::vector<int32_t> ref = prompt;
      ref.insert(ref.end(), plain.tokens.begin(), plain.tokens.end());
      const SpeculativeOptions so{.type = "ngram-simple", .n_max = 4};
      const GenRun oracle = generate(e, c, sampled, prompt, 16, so,
                                     std::make_unique<OracleDrafter>(ref, prompt.size(), e.n_vocab()));
      EXPECT_EQ(oracle.tokens, plain.tokens);
      const GenRun mod = generate(e, c, sampled, prompt, 16,
                                  {.type = "ngram-mod", .n_max = 4, .ngram_mod_n_match = 1});
      EXPECT_EQ(mod.tokens, plain.tokens);
    }
  }
}

// Proposes `d` once, after a history of `at` tokens.
class FixedDrafter : public runtime::Drafter {
 public:
  FixedDrafter(size_t at, int32_t d) : at_(at), d_(d) {}
  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int) override {
    if (history.size() != at_) return std::vector<int32_t>{};
    return std::vector<int32_t>{d_};
  }
  std::unique_ptr<runtime::Drafter> clone() const override {
    return std::make_unique<FixedDrafter>(*this);
  }

 private:
  size_t at_;
  int32_t d_;
};

// Softmax over the k largest logits (ties to the smaller id): the sampler's top-k at temp 1.
std::vector<std::pair<int32_t, double>> top_k_probs(std::span<const float> logits, int k) {
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<std::pair<int32_t, double>> out;
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += std::exp(static_cast<double>(logits[ids[i]] - logits[ids[0]]));
  for (int i = 0; i < k; ++i) {
    out.emplace_back(ids[i], std::exp(static_cast<double>(logits[ids[i]] - logits[ids[0]])) / sum);
  }
  return out;
}

// Pearson's chi-square of observed counts against expected probabilities.
double chi_square(const std::map<int32_t, int>& seen, const std::vector<std::pair<int32_t, double>>& p,
                  int n) {
  double x2 = 0;
  for (const auto& [id, q] : p) {
    const auto it = seen.find(id);
    const double o = it == seen.end() ? 0 : it->second, want = q * n;
    x2 += (o - want) * (o - want) / want;
  }
  return x2;
}

// The standard acceptance rule, statistically: after the prompt and a fixed token t0, the
// drafter proposes d (the target's most probable next token); over 1200 seeded runs (top-k 4,
// temp 1) the first sampled token x1 follows the target's p(. | prompt, t0) (d accepted exactly
// when drawn), and where x1 = d (the draft accepted, its logits row used without a new pass)
// the next token x2 follows p(. | prompt, t0, d): chi-square with 3 degrees of freedom below
// 16.27 (p = 0.001; the seeds are fixed, so the test is deterministic).
TEST(Speculation, SampledDistributionIsTheTargets) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = engine("llama3");
  const CacheOptions c = cache_of("tova", 12);
  std::vector<int32_t> prompt = prompt_of(e);
  const int32_t t0 = prompt.back();
  prompt.pop_back();
  // The target's probabilities, fed step by step without speculation.
  auto ref = e.new_session({.cache = c, .sampling = {.temp = 0}});
  ASSERT_TRUE(ref.ok());
  ASSERT_TRUE((*ref)->feed(prompt).ok());
  ASSERT_TRUE((*ref)->feed(std::span(&t0, 1)).ok());
  const auto p1 = top_k_probs((*ref)->logits(), 4);
  const int32_t d = p1[0].first;
  ASSERT_TRUE((*ref)->feed(std::span(&d, 1)).ok());
  const auto p2 = top_k_probs((*ref)->logits(), 4);

  const SpeculativeOptions so{.type = "ngram-simple", .n_max = 1};
  auto base = e.new_session({.cache = c, .sampling = {.temp = 0}, .speculative = so});
  ASSERT_TRUE(base.ok());
  ASSERT_TRUE((*base)->feed(prompt).ok());
  constexpr int kRuns = 1200;
  std::map<int32_t, int> x1_seen, x2_seen;
  int n_accepted = 0;
  for (int run = 0; run < kRuns; ++run) {
    std::unique_ptr<Session> s = (*base)->clone();
    ASSERT_TRUE(s->set_sampling({.temp = 1.0f, .top_k = 4, .top_p = 1.f, .min_p = 0.f,
                                 .seed = static_cast<uint64_t>(1000 + run)})
                    .ok());
    runtime::SessionAccess::impl(*s).spec = std::make_unique<runtime::Speculation>(
        so, std::make_unique<FixedDrafter>(prompt.size() + 1, d));
    s->queue(t0);
    int32_t unfed = -1;
    const std::vector<int32_t> out = continue_for(*s, 2, &unfed);
    ASSERT_EQ(out.size(), 2u);  // x1 (fed), x2 (sampled, unfed)
    ++x1_seen[out[0]];
    if (out[0] == d) {
      ++x2_seen[out[1]];
      ++n_accepted;
    }
    const SpeculationStats st = s->stats().speculation;
    EXPECT_EQ(st.n_drafted, 1);
    EXPECT_EQ(st.n_accepted, out[0] == d ? 1 : 0);  // x2 came from d's row, no new pass
  }
  EXPECT_EQ(runtime::SessionAccess::impl(**base).spec->stats().n_drafted, 0);  // clones drafted
  const double x2_1 = chi_square(x1_seen, p1, kRuns);
  const double x2_2 = chi_square(x2_seen, p2, n_accepted);
  std::printf("x1: chi2 %.2f over %d runs; x2 after an accepted draft: chi2 %.2f over %d\n",
              x2_1, kRuns, x2_2, n_accepted);
  EXPECT_LT(x2_1, 16.27);
  EXPECT_GT(n_accepted, 100);
  EXPECT_LT(x2_2, 16.27);
}

TEST(Speculation, BadOptionsAreOneLineNamingTheFlag) {
  auto err = [](const SpeculativeOptions& o) {
    const Status s = validate_speculative(o);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message().find('\n'), std::string::npos);
    return s.message();
  };
  EXPECT_NE(err({.type = "ngram-simple", .n_max = 0}).find("--spec-draft-n-max 0"),
            std::string::npos);
  EXPECT_NE(err({.type = "ngram-simple", .n_max = 100000}).find("--spec-draft-n-max 100000"),
            std::string::npos);
  EXPECT_NE(err({.type = "draft-eagle3"}).find("--spec-type draft-eagle3: not implemented"),
            std::string::npos);
  EXPECT_NE(err({.type = "lookahead"}).find("'lookahead'"), std::string::npos);
  EXPECT_NE(err({.type = "ngram-simple", .n_min = 20}).find("--spec-draft-n-min 20"),
            std::string::npos);
}

}  // namespace
}  // namespace tova
