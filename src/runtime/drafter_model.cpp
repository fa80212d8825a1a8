// draft-simple: a second, smaller model with the same vocabulary drafts greedily (llama.cpp's
// `--spec-type draft-simple`, `-md FILE`): its most probable token, fed back, for up to n_max
// tokens, stopping early where that token's probability (among the 10 most probable, as
// llama.cpp's top-10 draft sampler computes it: draft_choice) is below p_min. The draft model keeps
// its own multi-state (its own policy and budget, CacheOptions) in step with the target's
// history: each call feeds what the history added since the last (the accepted drafts and
// the new token, one pass), checkpoints the state (MultiState::clone of a small model's
// state), drafts, and goes back to the checkpoint, so what it drafted never stays in its state.
// A history that is not a continuation of what it fed (a reset session) starts it afresh.
#include <algorithm>
#include <cmath>

#include "runtime/cache_options.h"
#include "runtime/drafter.h"
#include "runtime/engine_access.h"
#include "runtime/sampler.h"
#include "runtime/sequence.h"
#include "tova/engine.h"

namespace tova::runtime {
namespace {

class ModelDrafter : public Drafter {
 public:
  ModelDrafter(const Engine& e, const model::Model& m, const CacheOptions& cache, float p_min)
      : e_(&e), m_(&m), cache_(cache), p_min_(p_min), logits_(m.config().n_vocab) {}

  ModelDrafter(const ModelDrafter& o)
      : e_(o.e_),
        m_(o.m_),
        cache_(o.cache_),
        p_min_(o.p_min_),
        state_(o.state_ ? o.state_->clone() : nullptr),
        fed_(o.fed_),
        logits_(o.logits_) {}

  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) override {
    std::vector<int32_t> out;
    if (history.empty() || n_max <= 0) return out;
    const auto lock = EngineAccess::exclusive(*e_);
    size_t common = 0;
    while (common < fed_.size() && common < history.size() && fed_[common] == history[common]) {
      ++common;
    }
    if (!state_ || common < fed_.size()) {
      TOVA_ASSIGN_OR_RETURN(state_, make_state(*m_, cache_, static_cast<int64_t>(history.size())));
      fed_.clear();
      common = 0;
    }
    if (common < history.size()) {
      TOVA_RETURN_IF_ERROR(
          feed(*m_, EngineAccess::pool(*e_), scratch_, *state_, history.subspan(common), 512, logits_.data()));
      fed_.assign(history.begin(), history.end());
    }
    std::unique_ptr<kv::MultiState> checkpoint = state_->clone();
    std::vector<float> cur = logits_;
    const int n_vocab = static_cast<int>(cur.size());
    for (int i = 0; i < n_max; ++i) {
      const DraftChoice c = draft_choice(cur.data(), n_vocab);
      if (c.p < p_min_) break;
      const int32_t tok = c.token;
      out.push_back(tok);
      if (i + 1 == n_max) break;
      TOVA_RETURN_IF_ERROR(feed(*m_, EngineAccess::pool(*e_), scratch_, *state_,
                                std::span<const int32_t>(&tok, 1), 1, cur.data()));
    }
    state_ = std::move(checkpoint);
    return out;
  }

  std::unique_ptr<Drafter> clone() const override { return std::make_unique<ModelDrafter>(*this); }
  uint64_t state_bytes() const override { return state_ ? state_->bytes() : 0; }

 private:
  const Engine* e_;
  const model::Model* m_;
  CacheOptions cache_;
  float p_min_;
  std::unique_ptr<kv::MultiState> state_;
  std::vector<int32_t> fed_;   // what state_ has seen
  std::vector<float> logits_;  // [n_vocab] after the last of fed_
  model::ForwardScratch scratch_;
};

}  // namespace

Result<std::unique_ptr<Drafter>> make_model_drafter(const Engine& e, const SpeculativeOptions& o,
                                                    const CacheOptions& cache) {
  if (EngineAccess::draft_model(e) == nullptr) {
    return make_error("--spec-type {} needs a draft model (-md / --spec-draft-model FILE)", o.type);
  }
  CacheOptions c = cache;
  c.prefill = PrefillMode{};  // the draft's steps are exact (one token at a time after the sync)
  c.reserve = 0;
  return std::unique_ptr<Drafter>(std::make_unique<ModelDrafter>(e, *EngineAccess::draft_model(e), c, o.p_min));
}

uint64_t model_drafter_reserve_bytes(const Engine& e, const CacheOptions& cache,
                                     int64_t n_prompt, int64_t n_ctx) {
  const model::Model* draft = EngineAccess::draft_model(e);
  if (draft == nullptr) return 0;
  CacheOptions c = cache;
  c.prefill = PrefillMode{};  // as make_model_drafter makes it
  return reserve_bytes(*draft, c, n_prompt, n_ctx);
}

}  // namespace tova::runtime
