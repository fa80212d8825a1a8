// Generating text: the one loop every front-end drives (`tova run`, `tova chat`, `tova serve`,
// Python's Session.generate). A TextStream belongs to one session and owns what happens to
// each sampled token: sampling, end of generation, detokenizing, holding back a broken UTF-8
// character or the beginning of a stop string, stop strings and limits. It hands out pieces of
// whole UTF-8 text and, once, a finish reason.
//
// Two ways to drive it:
// - on its own: next() feeds what the session has queued (the prompt, then each sampled token)
//   and returns the next piece;
// - batched: a scheduler feeds many sessions in one forward pass (runtime::BatchScheduler),
//   then calls advance() on the stream of every session that received logits.
// The token a stream samples is queued on its session for the next pass, unless it ends the
// generation (then unfed() returns it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tova/result.h"

namespace tova {

class Session;

enum class Finish {
  kNone,       // still generating
  kStop,       // an end-of-generation token or a stop string
  kLength,     // max_tokens, or the session's context limit
  kCancelled,  // the caller stopped it (cancel())
};
// "stop" | "length" | "cancelled" (OpenAI's finish_reason), "" for kNone.
std::string_view finish_name(Finish f);

struct GenerateOptions {
  int max_tokens = 256;  // tokens to generate; < 0: until the end of generation or max_context
  // The text ends where the first of these begins (it is not part of the text); while one may
  // be starting, the text that could be its beginning is held back.
  std::vector<std::string> stop;
  bool ignore_eos = false;  // keep generating past end-of-generation tokens
  // The most tokens an unbounded (`full`) session may hold (0: no limit): generation ends
  // ("length") once one more token would reach it. Bounded sessions never fill.
  int64_t max_context = 0;
  // A conversation's turn: the token that ends the stream at the length limit (whose text was
  // handed out) joins the history, queued on the session (the next feed, generate or save
  // feeds it; unfed() is then -1). Otherwise it stays unfed() for the caller (a session file
  // keeps it as pending).
  bool keep_length_token = false;
  // Control tokens whose text is handed out instead of nothing: what a reasoning parser reads
  // (harmony's <|channel|>, ...: tova/reasoning.h, reasoning_special_texts). A text that is no
  // single token of the vocabulary renders nothing, as it could not be generated.
  std::vector<std::string> render_special;
};

struct Piece {
  std::string text;  // whole UTF-8 (possibly empty)
  Finish finish = Finish::kNone;
};

struct StreamStats {
  int64_t n_prompt = 0;       // tokens queued when the stream started (fed by the first next())
  double prompt_seconds = 0;  // feeding them (next() only)
  int n_generated = 0;        // tokens generated (an end-of-generation token is not counted)
  int64_t n_decoded = 0;      // sampled tokens fed back, one forward pass each (next() only)
  double decode_seconds = 0;  // the passes and samplings after the prompt (next() only)
};

class TextStream {
 public:
  // Generates on `session` after what it has queued; with nothing queued it continues from the
  // session's logits. The session must outlive the stream.
  TextStream(Session& session, const GenerateOptions& o);
  ~TextStream();
  TextStream(TextStream&&) noexcept;
  TextStream& operator=(TextStream&&) noexcept;

  // On its own: feeds what is queued on the session, then advance(). After the end, returns
  // an empty piece with the finish reason.
  Result<Piece> next();
  // Batched: the session has logits (a scheduler fed it); samples and processes one token.
  Piece advance();
  // Ends the stream now (kCancelled) and returns the text it held back. A token already
  // queued on the session stays queued (its text was handed out).
  Piece cancel();

  bool done() const;
  Finish finish() const;
  // The last sampled token when it was not queued (the generation ended with it), else -1.
  int32_t unfed() const;
  const StreamStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tova
