#include "tova/session.h"

namespace tova {

Result<std::unique_ptr<Session>> Session::create(const model::Model& m, const SessionOptions& o) {
  TOVA_RETURN_IF_ERROR(runtime::validate(o.sampling));
  auto s = std::unique_ptr<Session>(new Session());
  s->model_ = &m;
  s->cache_ = o.cache;
  s->sampling_ = o.sampling;
  TOVA_ASSIGN_OR_RETURN(s->state_, kv::MultiState::create(m.state_options(
                                       o.cache.policy, o.cache.kv_type,
                                       runtime::max_new_for(o.cache.prefill, o.n_prompt_hint))));
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
  TOVA_ASSIGN_OR_RETURN(
      state_, kv::MultiState::create(model_->state_options(
                  cache_.policy, cache_.kv_type, runtime::max_new_for(cache_.prefill, 0))));
  history_.clear();
  n_fed_ = 0;
  has_logits_ = false;
  return ok_status();
}

}  // namespace tova
