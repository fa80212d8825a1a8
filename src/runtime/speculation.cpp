#include "runtime/speculation.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/gguf.h"
#include "tova/engine.h"

namespace tova::runtime {
namespace {

// The drafters: the one list of their names (llama.cpp's --spec-type spellings).
struct DrafterEntry {
  const char* name;
  Result<std::unique_ptr<Drafter>> (*make)(const Engine& e, const SpeculativeOptions& o,
                                           const CacheOptions& cache);
  // K/V bytes its own states reserve beside a session's (null: it holds none).
  uint64_t (*reserve)(const Engine& e, const CacheOptions& cache, int64_t n_prompt,
                      int64_t n_ctx) = nullptr;
};
constexpr DrafterEntry kDrafters[] = {
    {"ngram-simple",
     [](const Engine&, const SpeculativeOptions& o,
        const CacheOptions&) -> Result<std::unique_ptr<Drafter>> { return make_ngram_simple(o); }},
    {"ngram-mod",
     [](const Engine&, const SpeculativeOptions& o,
        const CacheOptions&) -> Result<std::unique_ptr<Drafter>> { return make_ngram_mod(o); }},
    {"draft-simple", make_model_drafter, model_drafter_reserve_bytes},
    {"draft-mtp", make_mtp_drafter, mtp_drafter_reserve_bytes},
};

const DrafterEntry* find_drafter(const std::string& type) {
  for (const DrafterEntry& d : kDrafters) {
    if (type == d.name) return &d;
  }
  return nullptr;
}

}  // namespace

uint64_t draft_reserve_bytes(const Engine& e, const SpeculativeOptions& o,
                             const CacheOptions& cache, int64_t n_prompt, int64_t n_ctx) {
  const DrafterEntry* d = o.on() ? find_drafter(o.type) : nullptr;
  return d != nullptr && d->reserve != nullptr ? d->reserve(e, cache, n_prompt, n_ctx) : 0;
}

}  // namespace tova::runtime

namespace tova {

namespace {
// llama.cpp's names (common/speculative.cpp) that tova recognizes but does not implement.
constexpr const char* kNotImplemented[] = {"draft-eagle3",  "draft-dflash", "ngram-map-k",
                                           "ngram-map-k4v", "ngram-cache",  "draft-dspark"};
constexpr int kMaxDraft = 256;
}  // namespace

std::string speculative_type_choices() {
  std::string r;
  for (const runtime::DrafterEntry& d : runtime::kDrafters) {
    if (!r.empty()) r += ", ";
    r += d.name;
  }
  return r;
}

Status validate_speculative(const SpeculativeOptions& o) {
  if (!o.on()) return ok_status();
  if (runtime::find_drafter(o.type) == nullptr) {
    for (const char* t : kNotImplemented) {
      if (o.type == t) {
        return make_error("--spec-type {}: not implemented in tova (implemented: {})", o.type,
                          speculative_type_choices());
      }
    }
    return make_error("--spec-type '{}' is not a speculative decoding type (implemented: {})",
                      o.type, speculative_type_choices());
  }
  if (o.n_max < 1 || o.n_max > kMaxDraft) {
    return make_error("--spec-draft-n-max {}: must be between 1 and {} drafted tokens per step",
                      o.n_max, kMaxDraft);
  }
  if (o.n_min < 0 || o.n_min > o.n_max) {
    return make_error("--spec-draft-n-min {}: must be between 0 and --spec-draft-n-max {}", o.n_min,
                      o.n_max);
  }
  if (!(o.p_min >= 0.f && o.p_min <= 1.f)) {
    return make_error("--spec-draft-p-min {}: must be in [0, 1]", o.p_min);
  }
  if (o.ngram_size_n < 1 || o.ngram_size_n > 1024) {
    return make_error("--spec-ngram-simple-size-n {}: must be between 1 and 1024", o.ngram_size_n);
  }
  if (o.ngram_mod_n_match < 1 || o.ngram_mod_n_match > 1024) {
    return make_error("--spec-ngram-mod-n-match {}: must be between 1 and 1024",
                      o.ngram_mod_n_match);
  }
  if (o.ngram_size_m < 1 || o.ngram_size_m > 1024) {
    return make_error("--spec-ngram-simple-size-m {}: must be between 1 and 1024", o.ngram_size_m);
  }
  return ok_status();
}

}  // namespace tova

namespace tova::runtime {

Speculation::Speculation(const SpeculativeOptions& o, std::unique_ptr<Drafter> drafter)
    : o_(o), drafter_(std::move(drafter)), n_cur_(o.n_max) {
  stats_.type = o.type;
}

Speculation::Speculation(const Speculation& other)
    : o_(other.o_),
      drafter_(other.drafter_->clone()),
      checkpoint_(other.checkpoint_ ? other.checkpoint_->clone() : nullptr),
      fed_before_(other.fed_before_),
      drafts_(other.drafts_),
      rows_(other.rows_),
      n_vocab_(other.n_vocab_),
      next_(other.next_),
      n_cur_(other.n_cur_),
      misses_(other.misses_),
      skip_(other.skip_),
      stats_(other.stats_) {}

Result<std::vector<int32_t>> Speculation::draft(std::span<const int32_t> history, int room) {
  std::vector<int32_t> out;
  if (skip_ > 0) {
    --skip_;
    return out;
  }
  const int n = std::min(n_cur_, room);
  if (n < std::max(1, o_.n_min)) return out;
  TOVA_ASSIGN_OR_RETURN(out, drafter_->draft(history, n));
  if (static_cast<int>(out.size()) < std::max(1, o_.n_min)) out.clear();
  return out;
}

void Speculation::begin_verify(const kv::MultiState& state, int64_t n_fed,
                               std::vector<int32_t> drafts) {
  checkpoint_ = state.clone();
  fed_before_ = n_fed;
  drafts_ = std::move(drafts);
  next_ = 0;
  ++stats_.n_steps;
  stats_.n_drafted += static_cast<int64_t>(drafts_.size());
}

void Speculation::end_verify(const float* rows, int n_vocab) {
  n_vocab_ = n_vocab;
  rows_.assign(rows, rows + drafts_.size() * static_cast<size_t>(n_vocab));
}

std::span<const float> Speculation::accept() {
  const std::span<const float> row(rows_.data() + next_ * static_cast<size_t>(n_vocab_),
                                   static_cast<size_t>(n_vocab_));
  ++next_;
  ++stats_.n_accepted;
  if (next_ == drafts_.size()) {  // every draft taken: the state is exact as it is
    adapt(static_cast<int>(drafts_.size()), static_cast<int>(drafts_.size()));
    checkpoint_.reset();
  }
  return row;
}

Speculation::Undo Speculation::reject() {
  adapt(static_cast<int>(drafts_.size()), static_cast<int>(next_));
  Undo u{.state = std::move(checkpoint_), .n_fed = fed_before_};
  drafts_.clear();
  next_ = 0;
  return u;
}

void Speculation::clear() {
  checkpoint_.reset();
  drafts_.clear();
  next_ = 0;
}

void Speculation::adapt(int n_drafted, int n_accepted) {
  if (n_accepted == n_drafted) {
    n_cur_ = std::min(o_.n_max, n_cur_ + 1);
    misses_ = 0;
    return;
  }
  if (n_accepted == 0) {
    n_cur_ = std::max(1, n_cur_ / 2);
    misses_ = std::min(misses_ + 1, 6);
    skip_ = (1 << misses_) - 1;
    return;
  }
  misses_ = 0;
  n_cur_ = std::max(1, std::min(n_cur_, n_accepted + 1));
}

SpeculationStats Speculation::stats() const {
  SpeculationStats s = stats_;
  s.draft_kv_bytes = drafter_->state_bytes();
  return s;
}

bool Speculation::wants_hidden() const { return drafter_->wants_hidden(); }

void Speculation::observe(int64_t pos, std::span<const int32_t> tokens, const float* hidden) {
  drafter_->observe(pos, tokens, hidden);
}

DraftChoice draft_choice(const float* logits, int n_vocab) {
  // The 10 largest logits, kept sorted (descending; among equals the smaller id first).
  constexpr int kTop = 10;
  float top[kTop];
  int32_t id[kTop];
  int n = 0;
  for (int32_t t = 0; t < n_vocab; ++t) {
    const float x = logits[t];
    if (n == kTop && !(x > top[kTop - 1])) continue;
    int j = n < kTop ? n++ : kTop - 1;
    while (j > 0 && x > top[j - 1]) {
      top[j] = top[j - 1];
      id[j] = id[j - 1];
      --j;
    }
    top[j] = x;
    id[j] = t;
  }
  if (n == 0) return {};
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += std::exp(static_cast<double>(top[j]) - top[0]);
  return {.token = id[0], .p = static_cast<float>(1.0 / sum)};
}

Result<std::unique_ptr<Speculation>> make_speculation(const Engine& e, const SpeculativeOptions& o,
                                                      const CacheOptions& cache) {
  if (!o.on()) return std::unique_ptr<Speculation>();
  TOVA_RETURN_IF_ERROR(validate_speculative(o));
  if (!cache.prefill.exact()) {
    return make_error(
        "--spec-type {} needs exact prefill, not {}: a verify step must change the "
        "multi-state as single steps would, and chunk:C evicts at chunk ends",
        o.type, cache.prefill.label());
  }
  TOVA_ASSIGN_OR_RETURN(std::unique_ptr<Drafter> d, find_drafter(o.type)->make(e, o, cache));
  return std::make_unique<Speculation>(o, std::move(d));
}

Status check_same_vocabulary(const model::Model& target, const model::Model& draft) {
  const std::string& a = target.file().path();
  const std::string& b = draft.file().path();
  if (target.config().n_vocab != draft.config().n_vocab) {
    return make_error(
        "draft model '{}' has a vocabulary of {} tokens, model '{}' {}: a draft "
        "model must share the model's vocabulary",
        b, draft.config().n_vocab, a, target.config().n_vocab);
  }
  const io::GgufValue* ta = target.file().find("tokenizer.ggml.tokens");
  const io::GgufValue* tb = draft.file().find("tokenizer.ggml.tokens");
  if ((ta == nullptr) != (tb == nullptr)) {
    return make_error(
        "draft model '{}' {} token texts, model '{}' {}: cannot check that they "
        "share a vocabulary",
        b, tb ? "has" : "has no", a, ta ? "has" : "has no");
  }
  if (ta == nullptr) return ok_status();
  const size_t n = std::min(ta->arr.size(), tb->arr.size());
  for (size_t i = 0; i < n; ++i) {
    if (ta->arr[i].str != tb->arr[i].str) {
      return make_error(
          "draft model '{}' has another vocabulary than model '{}': token {} is "
          "'{}' there, '{}' here",
          b, a, i, tb->arr[i].str, ta->arr[i].str);
    }
  }
  if (ta->arr.size() != tb->arr.size()) {
    return make_error("draft model '{}' lists {} token texts, model '{}' {}", b, tb->arr.size(), a,
                      ta->arr.size());
  }
  return ok_status();
}

}  // namespace tova::runtime
