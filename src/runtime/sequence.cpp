#include "runtime/sequence.h"

#include <algorithm>
#include <climits>

#include "runtime/forward_batch.h"

namespace tova::runtime {

Result<std::unique_ptr<kv::MultiState>> make_state(const model::Model& m, const CacheOptions& o,
                                                   int64_t n_prompt, bool runs_cuts,
                                                   int max_image) {
  if (!runs_cuts && o.policy.bounded() &&
      kv::layer_plan(o.policy, o.policy.args()).cut_by_caller) {
    return make_error(
        "KV policy '{}' evicts only in its scoring pass (the model re-reads its context), which "
        "only the task evaluation (tova eval) runs: sessions (run, chat, serve, Python), sweeps, "
        "traces and benchmarks would never evict",
        o.policy.label());
  }
  kv::MultiStateOptions so = m.state_options(o.policy, o.kv_type, o.prefill.max_new(n_prompt));
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
  so.prompt_end = std::max<int64_t>(0, n_prompt);
  so.max_image = std::max(0, max_image);
  if (o.keep_images) {
    if (so.max_image == 0) {
      return make_error("--kv-keep-images keeps image states, but no image can join this "
                        "session: the engine has no mmproj (--mmproj)");
    }
    if (o.max_kept_images < 1 || o.max_kept_images > (1 << 16)) {
      return make_error("--kv-keep-images-max {}: expected 1 to 65536 images", o.max_kept_images);
    }
    so.keep_images = true;
    so.max_kept_images = o.max_kept_images;
  }
  return kv::MultiState::create(so);
}

Status feed(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
            kv::MultiState& state, std::span<const int32_t> tokens, int n_batch,
            float* last_logits) {
  const size_t step = static_cast<size_t>(prompt_step(state, n_batch));
  const LogitsAt last = last_logits != nullptr ? LogitsAt::kLast : LogitsAt::kNone;
  ForwardBatch batch;
  for (size_t i0 = 0; i0 < tokens.size(); i0 += step) {
    const std::span<const int32_t> part = tokens.subspan(i0, std::min(step, tokens.size() - i0));
    batch.clear();
    batch.add(state, part, i0 + part.size() == tokens.size() ? last : LogitsAt::kNone);
    TOVA_RETURN_IF_ERROR(batch.run(m, pool, scratch, last_logits));
  }
  return ok_status();
}

}  // namespace tova::runtime
