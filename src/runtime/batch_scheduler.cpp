#include "runtime/batch_scheduler.h"

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"
#include "core/timer.h"
#include "runtime/session_impl.h"

namespace tova::runtime {

BatchScheduler::BatchScheduler(const Engine& engine, const SchedulerOptions& o)
    : engine_(engine), o_(o) {
  o_.step_tokens = std::max(1, o_.step_tokens);
}

namespace {

// A session that drafts this step: speculation on, an exact multi-state, and only the sampled
// token (and what a rejection left to re-feed) pending.
bool drafts_now(Session& s, bool speculate) {
  const Session::Impl& i = SessionAccess::impl(s);
  return speculate && i.spec != nullptr && s.n_pending() >= 1 &&
         s.n_pending() <= i.spec->max_pending() && i.state->max_new() == 1;
}

}  // namespace

Result<StepStats> BatchScheduler::step(std::span<Session* const> sessions, bool speculate) {
  StepStats st;
  takes_.clear();
  int budget = o_.step_tokens;
  // Decoding sessions first: one token each keeps every stream moving; a speculating session
  // its pending tokens and the drafts after them.
  for (Session* s : sessions) {
    if (budget <= 0) break;
    if (drafts_now(*s, speculate)) {
      const int n = static_cast<int>(s->n_pending());
      if (n > budget && !takes_.empty()) continue;
      Session::Impl& i = SessionAccess::impl(*s);
      TOVA_ASSIGN_OR_RETURN(std::vector<int32_t> d,
                            i.spec->draft(i.history, std::max(0, budget - n)));
      budget -= n + static_cast<int>(d.size());
      takes_.push_back({s, n, std::move(d)});
    } else if (s->n_pending() == 1) {
      takes_.push_back({s, 1, {}});
      --budget;
    }
  }
  // Then prompts, in the order given (a server lists the oldest request first).
  for (Session* s : sessions) {
    const int64_t n = s->n_pending();
    if (n <= 1 || drafts_now(*s, speculate)) continue;
    const int chunk = state_of(*s).max_new();
    if (chunk > 1) {
      // A chunked session takes whole chunks (chunk boundaries decide its evictions); one that
      // does not fit waits, unless the step is empty.
      const int want = static_cast<int>(std::min<int64_t>(n, chunk));
      if (want <= budget || takes_.empty()) {
        takes_.push_back({s, want, {}});
        budget -= want;
      }
    } else if (budget > 0) {
      const int want = static_cast<int>(std::min<int64_t>(n, budget));
      takes_.push_back({s, want, {}});
      budget -= want;
    }
  }
  if (takes_.empty()) return st;

  batch_.clear();
  int n_logits = 0;
  for (const Take& t : takes_) {
    const std::span<const int32_t> toks = t.session->pending().first(t.n);
    const bool last = t.n == t.session->n_pending();
    for (int i = 0; i < t.n; ++i) {
      const bool want_logits = last && i + 1 == t.n;
      batch_.push_back({.token = toks[i], .state = &state_of(*t.session), .logits = want_logits});
      n_logits += want_logits;
    }
    if (!t.drafts.empty()) {
      // The verify step: what undoes it is kept before the pass changes the multi-state.
      Session::Impl& s = SessionAccess::impl(*t.session);
      s.spec->begin_verify(*s.state, s.n_fed, t.drafts);
      for (int32_t d : t.drafts) {
        batch_.push_back({.token = d, .state = s.state.get(), .logits = true});
      }
      n_logits += static_cast<int>(t.drafts.size());
    }
  }
  const int n_vocab = engine_.n_vocab();
  logits_.resize(static_cast<size_t>(n_logits) * n_vocab);
  // A drafter that reads the target's hidden states (draft-mtp) gets every fed token's row.
  const bool hidden = std::any_of(takes_.begin(), takes_.end(), [](const Take& t) {
    const Session::Impl& s = SessionAccess::impl(*t.session);
    return s.spec != nullptr && s.spec->wants_hidden();
  });
  const size_t n_embd = static_cast<size_t>(engine_.model().config().n_embd);
  if (hidden) hidden_.resize(batch_.size() * n_embd);
  {
    const auto lock = engine_.exclusive();
    Timer timer;
    const Status fwd = engine_.model().forward(batch_, engine_.pool(), scratch_, logits_.data(), {},
                                               hidden ? hidden_.data() : nullptr);
    if (!fwd.ok()) {
      // Nothing was fed: the verify steps' sessions go back to their checkpoints.
      for (const Take& t : takes_) {
        if (t.drafts.empty()) continue;
        Session::Impl& s = SessionAccess::impl(*t.session);
        s.state = s.spec->reject().state;
      }
      return fwd.error();
    }
    st.seconds = timer.seconds();
  }
  int il = 0;
  size_t ib = 0;  // the take's first token in batch_
  for (const Take& t : takes_) {
    Session::Impl& s = SessionAccess::impl(*t.session);
    const bool last = t.n == t.session->n_pending();
    const size_t n_in = static_cast<size_t>(t.n) + t.drafts.size();
    if (hidden && s.spec != nullptr && s.spec->wants_hidden()) {
      std::vector<int32_t> toks(t.session->pending().begin(), t.session->pending().begin() + t.n);
      toks.insert(toks.end(), t.drafts.begin(), t.drafts.end());
      s.spec->observe(s.n_fed, toks, hidden_.data() + ib * n_embd);
    }
    ib += n_in;
    s.n_fed += t.n;
    s.has_logits = last;
    if (last) {
      std::memcpy(s.logits.data(), logits_.data() + static_cast<size_t>(il) * n_vocab,
                  sizeof(float) * n_vocab);
      ++il;
    }
    if (!t.drafts.empty()) {
      s.spec->end_verify(logits_.data() + static_cast<size_t>(il) * n_vocab, n_vocab);
      il += static_cast<int>(t.drafts.size());
    }
  }
  st.n_tokens = static_cast<int>(batch_.size());
  st.n_sessions = static_cast<int>(takes_.size());
  st.n_logits = n_logits;
  return st;
}

Status BatchScheduler::drain(std::span<Session* const> sessions, bool speculate) {
  for (;;) {
    TOVA_ASSIGN_OR_RETURN(const StepStats st, step(sessions, speculate));
    if (st.n_tokens == 0) return ok_status();
  }
}

}  // namespace tova::runtime
