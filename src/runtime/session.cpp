#include "tova/session.h"

#include <algorithm>

#include "runtime/sequence.h"

namespace tova {

Result<std::unique_ptr<Session>> Session::create(const model::Model& m, const SessionOptions& o) {
  TOVA_RETURN_IF_ERROR(runtime::validate(o.sampling));
  auto s = std::unique_ptr<Session>(new Session());
  s->model_ = &m;
  s->cache_ = o.cache;
  s->sampling_ = o.sampling;
  TOVA_ASSIGN_OR_RETURN(s->state_, runtime::make_state(m, o.cache, o.n_prompt_hint));
  s->sampler_ = std::make_unique<runtime::Sampler>(o.sampling);
  s->logits_.assign(m.config().n_vocab, 0.0f);
  return s;
}

std::unique_ptr<Session> Session::clone() const {
  auto s = std::unique_ptr<Session>(new Session());
  s->model_ = model_;
  s->cache_ = cache_;
  s->sampling_ = sampling_;
  s->state_ = state_->clone();
  s->sampler_ = std::make_unique<runtime::Sampler>(*sampler_);
  s->history_ = history_;
  s->n_fed_ = n_fed_;
  s->logits_ = logits_;
  s->has_logits_ = has_logits_;
  return s;
}

Result<std::unique_ptr<Session>> Session::resume(const model::Model& m, const SessionOptions& o,
                                                 runtime::SessionData d) {
  TOVA_RETURN_IF_ERROR(runtime::validate(o.sampling));
  if (d.state == nullptr) return make_error("session data without a multi-state");
  auto s = std::unique_ptr<Session>(new Session());
  s->model_ = &m;
  // The cache options are the restored state's (a reset starts the same kind of cache again);
  // only the reserve comes from the caller.
  s->cache_ = o.cache;
  s->cache_.policy = d.state->policy();
  s->cache_.kv_type = d.state->kv_type();
  s->cache_.positions = d.state->positions();
  if (d.state->max_new() > 1) s->cache_.prefill = {.chunk = d.state->max_new()};
  s->sampling_ = o.sampling;
  s->state_ = std::move(d.state);
  s->sampler_ = std::make_unique<runtime::Sampler>(o.sampling);
  if (!d.rng_state.empty()) TOVA_RETURN_IF_ERROR(s->sampler_->set_rng_state(d.rng_state));
  s->history_ = std::move(d.history);
  // A sampled token not fed yet is the history's last token, queued again.
  const bool pending = d.pending >= 0;
  if (pending && (s->history_.empty() || s->history_.back() != d.pending)) {
    s->history_.push_back(d.pending);
  }
  s->n_fed_ = static_cast<int64_t>(s->history_.size()) - (pending ? 1 : 0);
  s->logits_.assign(m.config().n_vocab, 0.0f);
  if (!d.logits.empty()) {
    if (d.logits.size() != s->logits_.size()) {
      return make_error("session logits have {} entries, the model's vocabulary {}",
                        d.logits.size(), s->logits_.size());
    }
    s->logits_ = std::move(d.logits);
    s->has_logits_ = !pending;
  }
  return s;
}

runtime::SessionData Session::save_data(int32_t unfed) const {
  runtime::SessionData d;
  d.state = state_->clone();
  d.history.assign(history_.begin(), history_.begin() + n_fed_);
  if (unfed >= 0) d.history.push_back(unfed);
  if (d.history.size() > static_cast<size_t>(runtime::kSessionHistory)) {
    d.history.erase(d.history.begin(), d.history.end() - runtime::kSessionHistory);
  }
  d.pending = unfed;
  if (has_logits_ || unfed >= 0) d.logits = logits_;
  d.rng_state = sampler_->rng_state();
  return d;
}

void Session::queue(std::span<const int32_t> tokens) {
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  if (!tokens.empty()) has_logits_ = false;
}

int32_t Session::sample() {
  return sampler_->sample(logits_.data(), static_cast<int>(logits_.size()),
                          std::span<const int32_t>(history_).first(n_fed_));
}

void Session::set_sampling(const runtime::SamplerParams& p) {
  sampling_ = p;
  sampler_ = std::make_unique<runtime::Sampler>(p);
}

Status Session::reset() {
  TOVA_ASSIGN_OR_RETURN(state_, runtime::make_state(*model_, cache_, 0));
  history_.clear();
  n_fed_ = 0;
  has_logits_ = false;
  return ok_status();
}

}  // namespace tova
