#include "runtime/batch_scheduler.h"

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"
#include "core/timer.h"
#include "runtime/engine_access.h"
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

Status BatchScheduler::choose_takes(std::span<Session* const> sessions, bool speculate) {
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
  // Then prompts, in the order given (a server lists the oldest request first), each at most
  // prompt_step of the budget left: a chunked session whole chunks (one that does not fit
  // waits, unless the step is empty).
  // An image is taken whole, in a step of its own for its session (runtime::next_run).
  for (Session* s : sessions) {
    const int64_t n = s->n_pending();
    if (n <= 1 || drafts_now(*s, speculate) || budget <= 0) continue;
    const NextRun next = next_run(SessionAccess::impl(*s));
    const int want = next.image != nullptr
                         ? static_cast<int>(next.n)
                         : static_cast<int>(std::min<int64_t>(
                               next.n, prompt_step(state_of(*s), budget)));
    if (want <= budget || takes_.empty()) {
      takes_.push_back({s, want, {}});
      budget -= want;
    }
  }
  return ok_status();
}

bool BatchScheduler::build_batch() {
  batch_.clear();
  bool hidden = false;
  for (Take& t : takes_) {
    Session::Impl& s = SessionAccess::impl(*t.session);
    const bool last = t.n == t.session->n_pending();
    const LogitsAt at = last ? LogitsAt::kLast : LogitsAt::kNone;
    const NextRun next = next_run(s);
    if (next.image != nullptr) {
      const Image& im = next.image->image;
      t.row = batch_.add_rows(*s.state, im.rows->data(), im.n_tokens, im.n_embd,
                              /*non_causal=*/true, at);
    } else {
      t.row = batch_.add(*s.state, t.session->pending().first(t.n), at);
    }
    if (!t.drafts.empty()) {
      // The verify step: what undoes it is kept before the pass changes the multi-state.
      s.spec->begin_verify(*s.state, s.n_fed, t.drafts);
      t.draft_row = batch_.add(*s.state, t.drafts, LogitsAt::kEach);
    }
    // A drafter that reads the target's hidden states (draft-mtp) gets every fed token's row.
    hidden = hidden || (s.spec != nullptr && s.spec->wants_hidden());
  }
  return hidden;
}

void BatchScheduler::deliver(bool hidden) {
  const size_t n_vocab = static_cast<size_t>(engine_.n_vocab());
  const size_t n_embd = static_cast<size_t>(EngineAccess::model(engine_).config().n_embd);
  size_t ib = 0;  // the take's first token in the batch
  for (const Take& t : takes_) {
    Session::Impl& s = SessionAccess::impl(*t.session);
    if (hidden && s.spec != nullptr && s.spec->wants_hidden()) {
      std::vector<int32_t> toks(t.session->pending().begin(), t.session->pending().begin() + t.n);
      toks.insert(toks.end(), t.drafts.begin(), t.drafts.end());
      s.spec->observe(s.n_fed, toks, hidden_.data() + ib * n_embd);
    }
    ib += static_cast<size_t>(t.n) + t.drafts.size();
    // An image fed: its rows are not read again (held states, clones and session files keep its
    // ids), so a session holding many images keeps only their K/V.
    if (const NextRun next = next_run(s); next.image != nullptr) {
      next.image->image.rows.reset();
    }
    s.n_fed += t.n;
    s.has_logits = t.row >= 0;
    if (t.row >= 0) std::memcpy(s.logits.data(), batch_.row(t.row), sizeof(float) * n_vocab);
    if (!t.drafts.empty()) s.spec->end_verify(batch_.row(t.draft_row), engine_.n_vocab());
  }
}

Result<StepStats> BatchScheduler::step(std::span<Session* const> sessions, bool speculate) {
  StepStats st;
  TOVA_RETURN_IF_ERROR(choose_takes(sessions, speculate));
  if (takes_.empty()) return st;
  const bool hidden = build_batch();
  if (hidden) {
    hidden_.resize(batch_.n_tokens() * static_cast<size_t>(EngineAccess::model(engine_).config().n_embd));
  }
  {
    const auto lock = EngineAccess::exclusive(engine_);
    Timer timer;
    const Status fwd = batch_.run(EngineAccess::model(engine_), EngineAccess::pool(engine_), scratch_, nullptr,
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
  deliver(hidden);
  st.n_tokens = static_cast<int>(batch_.n_tokens());
  st.n_sessions = static_cast<int>(takes_.size());
  st.n_logits = batch_.n_rows();
  return st;
}

Status BatchScheduler::drain(std::span<Session* const> sessions, bool speculate) {
  for (;;) {
    TOVA_ASSIGN_OR_RETURN(const StepStats st, step(sessions, speculate));
    if (st.n_tokens == 0) return ok_status();
  }
}

}  // namespace tova::runtime
