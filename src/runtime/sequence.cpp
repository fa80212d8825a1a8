#include "runtime/sequence.h"

#include <algorithm>
#include <climits>
#include <filesystem>

#include "core/timer.h"
#include "runtime/batch_scheduler.h"
#include "runtime/session_file.h"
#include "tova/session.h"

namespace tova::runtime {

Result<std::unique_ptr<kv::MultiState>> make_state(const model::Model& m, const CacheOptions& o,
                                                   int64_t n_prompt) {
  kv::MultiStateOptions so = m.state_options(o.policy, o.kv_type, max_new_for(o.prefill, n_prompt));
  // What the sequence can reach: the caller's reserve (prompt + tokens to generate), at least
  // the prompt. Every pool starts there (a bounded one at most at k + extra) and doubles when
  // full; with nothing known, a small first allocation.
  const int64_t want = std::max(o.reserve, n_prompt);
  if (!o.policy.bounded()) {
    if (want > kv::kMaxUnboundedReserve) {
      return make_error("cannot reserve a cache of {} tokens (at most {})", want,
                        kv::kMaxUnboundedReserve);
    }
    so.initial_slots = static_cast<int>(std::max<int64_t>(want, so.initial_slots));
  } else if (want > 0) {
    so.initial_slots = static_cast<int>(std::min<int64_t>(want, INT_MAX));
  }
  so.positions = o.positions;
  so.memory_limit = o.memory_limit;
  return kv::MultiState::create(so);
}

Status feed(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
            kv::MultiState& state, std::span<const int32_t> tokens, int n_batch,
            float* last_logits) {
  // A chunked sequence takes its chunks whole; exact sequences take any micro-batch size.
  const int step = state.max_new() > 1 ? state.max_new() : std::max(1, n_batch);
  std::vector<model::BatchToken> batch;
  for (size_t i0 = 0; i0 < tokens.size(); i0 += step) {
    const size_t i1 = std::min(tokens.size(), i0 + step);
    batch.clear();
    for (size_t i = i0; i < i1; ++i) {
      batch.push_back({.token = tokens[i],
                       .state = &state,
                       .logits = last_logits != nullptr && i + 1 == tokens.size()});
    }
    TOVA_RETURN_IF_ERROR(m.forward(batch, pool, scratch, last_logits));
  }
  return ok_status();
}

KvStats kv_stats(const kv::MultiState& s) {
  KvStats k;
  k.policy = s.policy().label();
  k.budget = s.budget();
  k.bytes = s.bytes();
  k.n_seen = s.n_seen();
  for (int il = 0; il < s.n_layer(); ++il) {
    k.layers.push_back({s.layer(il).n_held(), s.layer(il).n_evicted()});
  }
  return k;
}

Result<GenerateStats> generate(const model::Model& m, ThreadPool& pool,
                               std::span<const int32_t> prompt, const GenerateOptions& o,
                               const std::function<bool(int32_t)>& is_eog,
                               const std::function<bool(int32_t)>& on_token) {
  const bool resume = !o.session.empty() && std::filesystem::exists(o.session);
  if (prompt.empty() && !resume) {
    return make_error("the prompt is empty (no tokens to start from)");
  }
  std::unique_ptr<Session> session;
  GenerateStats st;
  if (resume) {
    Timer load;
    uint64_t bytes = 0;
    TOVA_ASSIGN_OR_RETURN(SessionData d, load_session(o.session, m, &bytes));
    st.session_load_seconds = load.seconds();
    st.session_loaded_bytes = static_cast<int64_t>(bytes);
    if (prompt.empty() && d.pending < 0 && d.logits.empty()) {
      return make_error("session '{}' has no logits to continue from; give a prompt", o.session);
    }
    TOVA_ASSIGN_OR_RETURN(
        session, Session::resume(m, {.cache = o.cache, .sampling = o.sampling}, std::move(d)));
    // A resumed `full` cache grows once, now, to hold this run.
    const int64_t n_hold = static_cast<int64_t>(session->history().size()) +
                           static_cast<int64_t>(prompt.size()) + o.n_predict;
    TOVA_RETURN_IF_ERROR(session->state().reserve(n_hold));
  } else {
    // A `full` cache holds the whole run from the start: no step pays for growing it.
    CacheOptions cache = o.cache;
    cache.reserve =
        std::max<int64_t>(cache.reserve, static_cast<int64_t>(prompt.size()) + o.n_predict);
    TOVA_ASSIGN_OR_RETURN(
        session, Session::create(m, {.cache = cache,
                                     .sampling = o.sampling,
                                     .n_prompt_hint = static_cast<int64_t>(prompt.size())}));
  }
  // The same scheduler `serve` batches many sessions through; here it holds one.
  BatchScheduler scheduler(m, pool, {.step_tokens = o.n_batch});
  Session* const sessions[] = {session.get()};
  Timer t;
  session->queue(prompt);
  st.n_prompt = session->n_pending();
  if (session->n_pending() > 0) TOVA_RETURN_IF_ERROR(scheduler.drain(sessions));
  st.prompt_seconds = t.seconds();

  t.reset();
  int32_t unfed = -1;  // the last sampled token, not fed yet
  for (int i = 0; i < o.n_predict; ++i) {
    const int32_t id = session->sample();
    unfed = id;
    ++st.n_generated;
    if (o.stop_at_eog && is_eog && is_eog(id)) break;
    if (!on_token(id)) break;
    if (i + 1 == o.n_predict) break;
    session->queue(id);
    TOVA_RETURN_IF_ERROR(scheduler.drain(sessions));
    unfed = -1;
  }
  st.decode_seconds = t.seconds();
  st.kv = kv_stats(session->state());
  if (!o.session.empty()) {
    Timer save;
    TOVA_ASSIGN_OR_RETURN(uint64_t bytes, save_session(o.session, m, session->save_data(unfed)));
    st.session_save_seconds = save.seconds();
    st.session_saved_bytes = static_cast<int64_t>(bytes);
  }
  return st;
}

}  // namespace tova::runtime
