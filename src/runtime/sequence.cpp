#include "runtime/sequence.h"

#include <algorithm>

#include "core/timer.h"
#include "runtime/batch_scheduler.h"
#include "tova/session.h"

namespace tova::runtime {

Result<std::unique_ptr<kv::MultiState>> make_state(const model::Model& m, const CacheOptions& o,
                                                   int64_t n_prompt) {
  return kv::MultiState::create(
      m.state_options(o.policy, o.kv_type, max_new_for(o.prefill, n_prompt)));
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
  if (prompt.empty()) return make_error("the prompt is empty (no tokens to start from)");
  TOVA_ASSIGN_OR_RETURN(auto session,
                        Session::create(m, {.cache = o.cache,
                                            .sampling = o.sampling,
                                            .n_prompt_hint = static_cast<int64_t>(prompt.size())}));
  // The same scheduler `serve` batches many sessions through; here it holds one.
  BatchScheduler scheduler(m, pool, {.step_tokens = o.n_batch});
  Session* const sessions[] = {session.get()};
  GenerateStats st;
  st.n_prompt = static_cast<int64_t>(prompt.size());
  Timer t;
  session->queue(prompt);
  TOVA_RETURN_IF_ERROR(scheduler.drain(sessions));
  st.prompt_seconds = t.seconds();

  t.reset();
  for (int i = 0; i < o.n_predict; ++i) {
    const int32_t id = session->sample();
    ++st.n_generated;
    if (o.stop_at_eog && is_eog && is_eog(id)) break;
    if (!on_token(id)) break;
    if (i + 1 == o.n_predict) break;
    session->queue(id);
    TOVA_RETURN_IF_ERROR(scheduler.drain(sessions));
  }
  st.decode_seconds = t.seconds();
  st.kv = kv_stats(session->state());
  return st;
}

}  // namespace tova::runtime
