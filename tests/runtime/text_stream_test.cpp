// TextStream, the one generation loop: what it does to each sampled token (hold back a broken
// UTF-8 character or a stop string's beginning, end at an end-of-generation token, a stop
// string, max_tokens or the context), driven token by token through scripted logits; then the
// same stream driven on its own (next) and batched with other sessions by the scheduler
// (advance), which must hand out the same pieces.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "runtime/batch_scheduler.h"
#include "runtime/engine_access.h"
#include "runtime/session_impl.h"
#include "tokenizer/tokenizer.h"
#include "runtime/stories_engine.h"
#include "tova/engine.h"
#include "tova/text_stream.h"

namespace tova {
namespace {

using testing::stories;

std::unique_ptr<Session> session(const std::string& policy = "full", int budget = 0) {
  auto c = parse_cache_options(policy, budget);
  EXPECT_TRUE(c.ok()) << c.message();
  auto s = stories().new_session({.cache = *c, .sampling = {.temp = 0}});
  EXPECT_TRUE(s.ok()) << s.message();
  return std::move(*s);
}

// The one token of a word ("the" -> "▁the").
int32_t word(const std::string& text) {
  const std::vector<int32_t> ids = stories().tokenize(text, false);
  EXPECT_EQ(ids.size(), 1u) << text;
  return ids.empty() ? 0 : ids[0];
}

int32_t token_of(const std::string& text) {
  const tok::Tokenizer& tk = EngineAccess::tokenizer(stories());
  for (int32_t id = 0; id < tk.n_vocab(); ++id) {
    if (tk.token_text(id) == text) return id;
  }
  ADD_FAILURE() << "no token " << text;
  return 0;
}

// The greedy sampler picks `id`: the stream advances as if a forward pass had produced it.
Piece script(TextStream& ts, Session& s, int32_t id) {
  Session::Impl& impl = runtime::SessionAccess::impl(s);
  std::fill(impl.logits.begin(), impl.logits.end(), 0.0f);
  impl.logits[id] = 10.0f;
  impl.has_logits = true;
  return ts.advance();
}

TEST(TextStream, BrokenUtf8IsHeldBackUntilTheCharacterCompletes) {
  auto s = session();
  s->queue(stories().tokenize("Hi"));
  TextStream ts(*s, {.max_tokens = 10});
  // "€" is E2 82 AC: three byte tokens.
  EXPECT_EQ(script(ts, *s, token_of("<0xE2>")).text, "");
  EXPECT_EQ(script(ts, *s, token_of("<0x82>")).text, "");
  const Piece p = script(ts, *s, token_of("<0xAC>"));
  EXPECT_EQ(p.text, "€");
  EXPECT_EQ(p.finish, Finish::kNone);
  // A character cut off by the end is handed out as it is.
  EXPECT_EQ(script(ts, *s, token_of("<0xE2>")).text, "");
  const Piece end = ts.cancel();
  EXPECT_EQ(end.text, "\xE2");
  EXPECT_EQ(end.finish, Finish::kCancelled);
  EXPECT_EQ(ts.stats().n_generated, 4);
}

TEST(TextStream, AStopStringEndsTheTextWhereItBeginsAndIsNeverHalfHandedOut) {
  auto s = session();
  s->queue(stories().tokenize("Hi"));
  TextStream ts(*s, {.max_tokens = 50, .stop = {"cat"}});
  const std::vector<int32_t> ids = stories().tokenize("the big cat sat", false);
  std::string text;
  Finish finish = Finish::kNone;
  int32_t last = -1;
  for (int32_t id : ids) {
    const Piece p = script(ts, *s, id);
    // Whatever is handed out never ends with a beginning of the stop string.
    for (size_t n = 1; n < 3 && n <= p.text.size(); ++n) {
      EXPECT_NE(p.text.substr(p.text.size() - n), std::string("cat").substr(0, n)) << p.text;
    }
    text += p.text;
    last = id;
    if ((finish = p.finish) != Finish::kNone) break;
  }
  EXPECT_EQ(finish, Finish::kStop);
  EXPECT_EQ(text, " the big ");
  EXPECT_EQ(ts.unfed(), last);  // the token that completed it is not queued
  EXPECT_TRUE(ts.done());
  EXPECT_EQ(ts.advance().finish, Finish::kStop);  // and stays done
}

TEST(TextStream, HeldBackTextThatIsNoStopStringIsHandedOutLater) {
  auto s = session();
  s->queue(stories().tokenize("Hi"));
  TextStream ts(*s, {.max_tokens = 50, .stop = {" bigger"}});
  std::string text;
  for (int32_t id : stories().tokenize("the big cat", false)) text += script(ts, *s, id).text;
  EXPECT_EQ(text, " the big cat");
  EXPECT_FALSE(ts.done());
}

TEST(TextStream, EndOfGenerationStopsUnlessIgnored) {
  const int32_t eos = EngineAccess::tokenizer(stories()).eos();
  ASSERT_GE(eos, 0);
  auto s = session();
  s->queue(stories().tokenize("Hi"));
  TextStream ts(*s, {.max_tokens = 10});
  script(ts, *s, word("the"));
  const int64_t queued = s->n_pending();
  const Piece p = script(ts, *s, eos);
  EXPECT_EQ(p.finish, Finish::kStop);
  EXPECT_EQ(ts.unfed(), eos);
  EXPECT_EQ(ts.stats().n_generated, 1);  // the end-of-generation token is not counted
  EXPECT_EQ(s->n_pending(), queued);     // nor queued

  auto s2 = session();
  s2->queue(stories().tokenize("Hi"));
  TextStream ignoring(*s2, {.max_tokens = 10, .ignore_eos = true});
  EXPECT_EQ(script(ignoring, *s2, eos).finish, Finish::kNone);
}

// A control token renders nothing, unless render_special names it (a reasoning parser reads
// harmony's headers so); a text that is no token of the vocabulary renders nothing either.
TEST(TextStream, ControlTokensRenderOnlyWhenAsked) {
  const int32_t bos = EngineAccess::tokenizer(stories()).bos();
  ASSERT_GE(bos, 0);
  auto s = session();
  s->queue(stories().tokenize("Hi"));
  TextStream plain(*s, {.max_tokens = 10});
  EXPECT_EQ(script(plain, *s, bos).text, "");
  auto s2 = session();
  s2->queue(stories().tokenize("Hi"));
  TextStream shown(*s2, {.max_tokens = 10, .render_special = {"<s>", "<|channel|>"}});
  EXPECT_EQ(script(shown, *s2, bos).text, "<s>");
  EXPECT_EQ(script(shown, *s2, word("the")).text, "the");  // (SentencePiece: no space after BOS)
}

TEST(TextStream, MaxTokensAndTheContextEndWithLength) {
  auto s = session();
  s->queue(stories().tokenize("Hi"));
  TextStream ts(*s, {.max_tokens = 3});
  const int32_t the = word("the");
  EXPECT_EQ(script(ts, *s, the).finish, Finish::kNone);
  EXPECT_EQ(script(ts, *s, the).finish, Finish::kNone);
  const Piece last = script(ts, *s, the);
  EXPECT_EQ(last.finish, Finish::kLength);
  EXPECT_EQ(last.text, " the");  // the last token's text comes with the finish
  EXPECT_EQ(ts.unfed(), the);

  auto none = session();
  none->queue(stories().tokenize("Hi"));
  TextStream zero(*none, {.max_tokens = 0});
  auto p = zero.next();
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->finish, Finish::kLength);
  EXPECT_EQ(p->text, "");

  // `full` under a context of 8: the prompt (3 tokens with BOS) and 4 more fill it.
  auto full = session();
  full->queue(stories().tokenize("Once upon"));
  ASSERT_EQ(full->n_pending(), 3);
  TextStream limited(*full, {.max_tokens = -1, .ignore_eos = true, .max_context = 8});
  int n = 0;
  while (!limited.done()) {
    auto q = limited.next();
    ASSERT_TRUE(q.ok()) << q.message();
    ++n;
  }
  EXPECT_EQ(limited.finish(), Finish::kLength);
  EXPECT_EQ(n, 5);
  EXPECT_EQ(full->n_seen() + 1, 8);
  // A bounded session is never full.
  auto bounded = session("tova", 4);
  bounded->queue(stories().tokenize("Once upon"));
  TextStream free(*bounded, {.max_tokens = 12, .ignore_eos = true, .max_context = 8});
  while (!free.done()) ASSERT_TRUE(free.next().ok());
  EXPECT_EQ(free.stats().n_generated, 12);
}

// A conversation's turn (chat, Python's generate): the token that hit the length limit joins
// the history, queued; otherwise it stays unfed for the caller.
TEST(TextStream, TheLengthTokenJoinsTheHistoryWhenAsked) {
  const int32_t the = word("the");
  for (bool keep : {false, true}) {
    SCOPED_TRACE(keep);
    auto s = session();
    s->queue(stories().tokenize("Hi"));
    const size_t n_prompt = s->history().size();
    TextStream ts(*s, {.max_tokens = 2, .keep_length_token = keep});
    EXPECT_EQ(script(ts, *s, the).finish, Finish::kNone);
    EXPECT_EQ(script(ts, *s, the).finish, Finish::kLength);
    EXPECT_EQ(ts.unfed(), keep ? -1 : the);
    EXPECT_EQ(s->history().size(), n_prompt + (keep ? 2 : 1));
    EXPECT_EQ(s->history().back(), the);
  }
}

TEST(TextStream, NothingToGenerateFromIsAnError) {
  auto s = session();
  TextStream ts(*s, {});
  auto p = ts.next();
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.message().find("no tokens queued"), std::string::npos) << p.message();
}

// The pieces of one request, driven on its own.
struct Output {
  std::vector<std::string> pieces;
  Finish finish = Finish::kNone;
};

struct Request {
  std::string prompt;
  std::string policy;
  int budget;
  GenerateOptions o;
};

std::vector<Request> requests() {
  return {
      {"Once upon a time", "full", 0, {.max_tokens = 40}},
      {"One day, a little girl", "tova", 12, {.max_tokens = 60, .stop = {"."}}},
      {"The dog", "window", 8, {.max_tokens = 60, .stop = {"ing", "zzz"}}},
      {"Lily and Tom", "h2o", 10, {.max_tokens = 80}},
      {"A cat", "full", 0, {.max_tokens = -1, .ignore_eos = true, .max_context = 20}},
      {"Once", "sink:2", 6, {.max_tokens = 25, .ignore_eos = true}},
  };
}

TEST(TextStream, BatchedStreamsHandOutWhatEachHandsOutAlone) {
  std::vector<Output> alone;
  for (const Request& r : requests()) {
    auto s = session(r.policy, r.budget);
    s->queue(stories().tokenize(r.prompt));
    TextStream ts(*s, r.o);
    Output out;
    while (!ts.done()) {
      auto p = ts.next();
      ASSERT_TRUE(p.ok()) << p.message();
      if (!p->text.empty()) out.pieces.push_back(p->text);
      out.finish = p->finish;
    }
    alone.push_back(out);
  }
  // All at once through one scheduler, prompts cut by a small step budget, as `serve` runs.
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<TextStream> streams;
  for (const Request& r : requests()) {
    sessions.push_back(session(r.policy, r.budget));
    sessions.back()->queue(stories().tokenize(r.prompt));
    streams.emplace_back(*sessions.back(), r.o);
  }
  runtime::BatchScheduler sched(stories(), {.step_tokens = 5});
  std::vector<Output> together(sessions.size());
  for (;;) {
    std::vector<Session*> live;
    for (size_t i = 0; i < sessions.size(); ++i) {
      if (!streams[i].done()) live.push_back(sessions[i].get());
    }
    if (live.empty()) break;
    ASSERT_TRUE(sched.step(live).ok());
    for (size_t i = 0; i < sessions.size(); ++i) {
      if (streams[i].done() || !sessions[i]->has_logits()) continue;
      const Piece p = streams[i].advance();
      if (!p.text.empty()) together[i].pieces.push_back(p.text);
      together[i].finish = p.finish;
    }
  }
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ(together[i].pieces, alone[i].pieces) << "request " << i;
    EXPECT_EQ(together[i].finish, alone[i].finish) << "request " << i;
    EXPECT_NE(alone[i].finish, Finish::kNone);
  }
  EXPECT_EQ(alone[1].finish, Finish::kStop);    // "."
  EXPECT_EQ(alone[2].finish, Finish::kStop);    // "ing"
  EXPECT_EQ(alone[4].finish, Finish::kLength);  // the context of 20
}

}  // namespace
}  // namespace tova
