#include "runtime/sampler.h"

#include "grammar/gbnf.h"

#include <sstream>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "core/field_names.h"

namespace tova {

Status validate(const SamplerParams& p) {
  if (!std::isfinite(p.temp)) return make_error("{} must be a finite number", field::kTemperature);
  if (!(p.top_p > 0.f) || !std::isfinite(p.top_p)) return make_error("{} must be > 0", field::kTopP);
  if (p.min_p < 0.f || p.min_p > 1.f) return make_error("{} must be in [0, 1]", field::kMinP);
  if (!(p.repeat_penalty > 0.f) || !std::isfinite(p.repeat_penalty)) {
    return make_error("{} must be > 0", field::kRepeatPenalty);
  }
  if (p.repeat_last_n < 0) return make_error("{} must be >= 0", field::kRepeatLastN);
  if (!p.grammar.empty()) TOVA_RETURN_IF_ERROR(grammar::parse_gbnf(p.grammar));
  return ok_status();
}

}  // namespace tova

namespace tova::runtime {

int32_t argmax(const float* logits, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

Sampler::Sampler(const SamplerParams& p, std::optional<grammar::Constraint> grammar)
    : p_(p), rng_(p.seed), grammar_(std::move(grammar)) {}

std::string Sampler::rng_state() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

Status Sampler::set_rng_state(const std::string& text) {
  std::istringstream in(text);
  std::mt19937_64 r;
  in >> r;
  if (in.fail()) return make_error("invalid sampler state");
  rng_ = r;
  return ok_status();
}

int32_t Sampler::sample(const float* logits, int n_vocab, std::span<const int32_t> history) {
  prepare(logits, n_vocab, history, nullptr);
  if (!grammar_) return pick();
  // The piece after nothing but BOS loses a SentencePiece leading space (TextStream's `prev`).
  const int32_t bos = grammar_->bos();
  const bool at_start = history.empty() || (bos >= 0 && history.back() == bos);
  // Rejection first: independent draws from the unconstrained chain until the grammar takes
  // one (given acceptance, exactly a draw from the masked chain); greedy has one candidate.
  int32_t id = pick();
  if (grammar_->accept(id, at_start)) return id;
  if (greedy_ < 0) {
    // More draws by bisection of the cumulative weights (the first drew as the unconstrained
    // chain does, token for token).
    std::partial_sum(w_.begin(), w_.end(), w_.begin());
    for (int k = 1; k < kTries; ++k) {
      std::uniform_real_distribution<double> u(0.0, w_.back());
      const double r = u(rng_);
      const size_t i = std::min<size_t>(
          std::lower_bound(w_.begin(), w_.end(), r) - w_.begin(), w_.size() - 1);
      id = cands_[i].id;
      if (grammar_->accept(id, at_start)) return id;
    }
  }
  ++n_masked_;
  const int n_allowed = grammar_->mask(at_start, allowed_);
  allowed_.resize(n_vocab, 0);  // logits past the tokenizer's vocabulary have no text
  if (n_allowed == 0) {
    grammar_error_ = grammar_->error();
    const int32_t eog = grammar_->first_eog();
    return eog >= 0 ? eog : id;
  }
  prepare(logits, n_vocab, history, &allowed_);
  id = pick();
  grammar_->accept(id, at_start);
  return id;
}

int32_t Sampler::pick() {
  if (greedy_ >= 0) return greedy_;
  std::uniform_real_distribution<double> u(0.0, wsum_);
  double r = u(rng_);
  const size_t n = w_.size();
  for (size_t i = 0; i < n; ++i) {
    r -= w_[i];
    if (r <= 0) return cands_[i].id;
  }
  return cands_[n - 1].id;
}

void Sampler::prepare(const float* logits, int n_vocab, std::span<const int32_t> history,
                      const std::vector<char>* allowed) {
  greedy_ = -1;
  cands_.clear();
  if (allowed == nullptr) {
    cands_.resize(n_vocab);
    for (int i = 0; i < n_vocab; ++i) cands_[i] = {i, logits[i]};
  } else {
    for (int i = 0; i < n_vocab; ++i) {
      if ((*allowed)[i]) cands_.push_back({i, logits[i]});
    }
  }
  if (p_.repeat_penalty != 1.f && p_.repeat_last_n > 0) {
    const size_t n = std::min<size_t>(history.size(), p_.repeat_last_n);
    std::unordered_set<int32_t> seen(history.end() - n, history.end());
    for (int32_t id : seen) {
      if (id < 0 || id >= n_vocab) continue;
      Cand* c = nullptr;
      if (allowed == nullptr) {
        c = &cands_[id];
      } else {
        auto it = std::lower_bound(cands_.begin(), cands_.end(), id,
                                   [](const Cand& a, int32_t b) { return a.id < b; });
        if (it == cands_.end() || it->id != id) continue;
        c = &*it;
      }
      float& l = c->logit;
      l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    }
  }
  if (p_.temp <= 0.f) {
    size_t best = 0;
    for (size_t i = 1; i < cands_.size(); ++i) {
      if (cands_[i].logit > cands_[best].logit) best = i;
    }
    greedy_ = cands_[best].id;
    return;
  }
  auto by_logit = [](const Cand& a, const Cand& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
  };
  size_t n = cands_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
    n = p_.top_k;
    std::partial_sort(cands_.begin(), cands_.begin() + n, cands_.end(), by_logit);
  } else {
    std::sort(cands_.begin(), cands_.end(), by_logit);
  }
  // Softmax over the kept candidates (sorted, largest first).
  std::vector<double> prob(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    prob[i] = std::exp(static_cast<double>(cands_[i].logit) - cands_[0].logit);
    sum += prob[i];
  }
  for (double& q : prob) q /= sum;
  if (p_.top_p < 1.f) {
    double cum = 0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cum += prob[i];
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
  }
  if (p_.min_p > 0.f) {
    size_t keep = 1;
    while (keep < n && prob[keep] >= p_.min_p * prob[0]) ++keep;
    n = keep;
  }
  // Temperature: the weights pick() draws from.
  w_.resize(n);
  wsum_ = 0;
  for (size_t i = 0; i < n; ++i) {
    w_[i] = std::exp((static_cast<double>(cands_[i].logit) - cands_[0].logit) / p_.temp);
    wsum_ += w_[i];
  }
}

}  // namespace tova::runtime
