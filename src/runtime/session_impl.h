// Behind tova/session.h: what a Session holds, and the library's access to it (the batch
// scheduler writes logits and marks tokens fed; session files and the server's state store
// read and restore the multi-state). Not part of the public face.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/multi_state.h"
#include "runtime/sampler.h"
#include "runtime/session_file.h"
#include "runtime/speculation.h"
#include "tova/engine.h"
#include "tova/session.h"

namespace tova::runtime {

class BatchScheduler;

}  // namespace tova::runtime

namespace tova {

namespace runtime {
// An image queued in a session: its first token's index in the history, and its rows.
struct QueuedImage {
  int64_t start = 0;
  Image image;
};
}  // namespace runtime

struct Session::Impl {
  // Null for a driven session (runtime::driven_session): it has no engine, only a tokenizer.
  const Engine* engine = nullptr;
  const tok::Tokenizer* tokenizer = nullptr;  // what TextStream detokenizes with
  CacheOptions cache;
  SamplerParams sampling;
  int n_batch = 512;
  std::unique_ptr<kv::MultiState> state;
  std::unique_ptr<runtime::Sampler> sampler;
  std::vector<int32_t> history;  // fed, then pending
  // The images of the history, in order (Session::queue_image): their tokens' rows.
  std::vector<runtime::QueuedImage> images;
  int64_t n_fed = 0;
  std::vector<float> logits;  // [n_vocab], after the last fed token
  bool has_logits = false;
  // Feeds this session on its own (feed); made on first use.
  std::unique_ptr<runtime::BatchScheduler> driver;
  // Speculative decoding (SessionOptions::speculative), or null. While drafts of the last
  // verify step are outstanding (spec->n_outstanding() > 0) the multi-state has seen them too.
  std::unique_ptr<runtime::Speculation> spec;
  Session* self = nullptr;  // the session holding this (set by its constructor)
  // Rejects outstanding drafts: the multi-state goes back to before the verify step and the
  // tokens accepted since are pending again (runtime/speculation.h).
  void undo_drafts();
  // Rejects outstanding drafts and feeds the accepted tokens again, keeping the logits: the
  // multi-state then holds exactly the fed tokens (before a save, a clone, stats).
  Status settle();
  ~Impl();
};

namespace runtime {

struct SessionAccess {
  static Session::Impl& impl(Session& s) { return *s.impl_; }
  static const Session::Impl& impl(const Session& s) { return *s.impl_; }
  static std::unique_ptr<Session> make(std::unique_ptr<Session::Impl> impl) {
    return std::unique_ptr<Session>(new Session(std::move(impl)));
  }
};

inline kv::MultiState& state_of(Session& s) { return *SessionAccess::impl(s).state; }
inline const kv::MultiState& state_of(const Session& s) { return *SessionAccess::impl(s).state; }

// A sampler of `p` for sessions of `e`: its grammar, if any, compiled against e's vocabulary
// (an error names the grammar's fault, or says that the model has no tokenizer).
Result<std::unique_ptr<Sampler>> make_sampler(const Engine& e, const SamplerParams& p);

// A session continuing from saved data (Engine::load_session reads it from a file; the server's
// state store adjusts the history first).
Result<std::unique_ptr<Session>> resume_session(const Engine& e, const SessionOptions& o,
                                                SessionData d);
// A session whose forward passes someone else runs (an evaluation that batches many
// configurations, some riding along with others: model::Follower): it has a multi-state, a
// sampler, a history and logits, and a TextStream drives its generation as on any session; the
// driver feeds its pending tokens itself and reports them with mark_fed. It has no engine:
// feed, decode, reset, save, clone and engine() are not for it.
std::unique_ptr<Session> driven_session(const tok::Tokenizer& tk, int n_vocab,
                                        std::unique_ptr<kv::MultiState> state,
                                        const SamplerParams& sampling);
// The driver fed the first n pending tokens of s; `logits` ([n_vocab]) are those after the
// last of them, given exactly when that was the last pending token.
void mark_fed(Session& s, int64_t n, const float* logits);

// Settles outstanding speculative drafts (Impl::settle) before a reader of the multi-state
// (state store, state views): the state then holds exactly the fed tokens.
Status settle(const Session& s);
// The session drafts with `o` from now on: its speculation is kept where o equals its
// options (a drafter's own state, the MTP block's K/V, continues), else made anew.
Status set_speculation(Session& s, const SpeculativeOptions& o);

// What the next step of s may take from its pending tokens: an image that starts there is taken
// whole (n: its tokens, image set); else the text before the next image, or all pending.
struct NextRun {
  int64_t n = 0;
  QueuedImage* image = nullptr;
};
NextRun next_run(Session::Impl& s);

// What a session file needs to continue exactly from here; `unfed`: see SaveOptions. Requires
// nothing pending.
SessionData session_data(const Session& s, int32_t unfed);

}  // namespace runtime
}  // namespace tova
