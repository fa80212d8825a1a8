#include "tova/session.h"

#include <algorithm>

#include "core/timer.h"
#include "model/model.h"
#include "runtime/batch_scheduler.h"
#include "runtime/engine_access.h"
#include "runtime/sequence.h"
#include "runtime/session_impl.h"

namespace tova {

Session::Impl::~Impl() = default;

void Session::Impl::undo_drafts() {
  if (!spec || spec->n_outstanding() == 0) return;
  runtime::Speculation::Undo u = spec->reject();
  state = std::move(u.state);
  n_fed = u.n_fed;
  has_logits = false;
}

Status Session::Impl::settle() {
  if (!spec || spec->n_outstanding() == 0) return ok_status();
  const std::vector<float> kept = logits;
  const bool had = has_logits;
  const int64_t fed = n_fed;
  undo_drafts();
  // The accepted tokens again, without drafting (they are all this step feeds).
  if (!driver) {
    driver = std::make_unique<runtime::BatchScheduler>(
        *engine, runtime::SchedulerOptions{.step_tokens = n_batch});
  }
  Session* const one[] = {self};
  TOVA_RETURN_IF_ERROR(driver->drain(one, /*speculate=*/false));
  if (n_fed != fed) return make_error("settling speculation fed {} tokens of {}", n_fed, fed);
  logits = kept;
  has_logits = had;
  return ok_status();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) { impl_->self = this; }
Session::~Session() = default;

const Engine& Session::engine() const { return *impl_->engine; }
const CacheOptions& Session::cache() const { return impl_->cache; }
const SamplerParams& Session::sampling() const { return impl_->sampling; }

Status Session::set_sampling(const SamplerParams& p) {
  TOVA_RETURN_IF_ERROR(validate(p));
  TOVA_ASSIGN_OR_RETURN(auto sampler, runtime::make_sampler(*impl_->engine, p));
  impl_->sampling = p;
  impl_->sampler = std::move(sampler);
  return ok_status();
}

Status Session::set_grammar(const std::string& gbnf) {
  SamplerParams p = impl_->sampling;
  p.grammar = gbnf;
  TOVA_RETURN_IF_ERROR(validate(p));
  TOVA_ASSIGN_OR_RETURN(auto sampler, runtime::make_sampler(*impl_->engine, p));
  TOVA_RETURN_IF_ERROR(sampler->set_rng_state(impl_->sampler->rng_state()));
  impl_->sampling = p;
  impl_->sampler = std::move(sampler);
  return ok_status();
}

Status Session::feed(std::span<const int32_t> tokens) {
  TOVA_RETURN_IF_ERROR(impl_->engine->check_token_ids(tokens));
  queue(tokens);
  if (n_pending() == 0) return ok_status();
  Impl& s = *impl_;
  if (!s.driver) {
    s.driver = std::make_unique<runtime::BatchScheduler>(
        *s.engine, runtime::SchedulerOptions{.step_tokens = s.n_batch});
  }
  Session* const one[] = {this};
  return s.driver->drain(one);
}

Result<int32_t> Session::decode() {
  if (!has_logits()) return make_error("the session has no logits to sample from (feed it first)");
  const int32_t id = sample();
  TOVA_RETURN_IF_ERROR(feed(std::span<const int32_t>(&id, 1)));
  return id;
}

void Session::queue(std::span<const int32_t> tokens) {
  Impl& s = *impl_;
  if (tokens.empty()) return;
  if (s.spec && s.spec->n_outstanding() > 0) {
    // The sampler's token is the next draft: already fed, its logits known.
    if (tokens.size() == 1 && tokens[0] == s.spec->next_draft() &&
        s.n_fed == static_cast<int64_t>(s.history.size())) {
      const std::span<const float> row = s.spec->accept();
      s.history.push_back(tokens[0]);
      ++s.n_fed;
      std::copy(row.begin(), row.end(), s.logits.begin());
      s.has_logits = true;
      return;
    }
    s.undo_drafts();
  }
  s.history.insert(s.history.end(), tokens.begin(), tokens.end());
  if (!tokens.empty()) s.has_logits = false;
}

std::span<const int32_t> Session::pending() const {
  return std::span<const int32_t>(impl_->history).subspan(impl_->n_fed);
}
int64_t Session::n_pending() const {
  return static_cast<int64_t>(impl_->history.size()) - impl_->n_fed;
}
const std::vector<int32_t>& Session::history() const { return impl_->history; }
int64_t Session::n_fed() const { return impl_->n_fed; }
int64_t Session::n_seen() const {
  // Drafts of a verify step the sampler has not confirmed are not seen yet.
  return impl_->state->n_seen() - (impl_->spec ? impl_->spec->n_outstanding() : 0);
}
bool Session::has_logits() const { return impl_->has_logits; }
std::span<const float> Session::logits() const { return impl_->logits; }
int Session::n_vocab() const { return static_cast<int>(impl_->logits.size()); }

int32_t Session::sample() {
  Impl& s = *impl_;
  return s.sampler->sample(s.logits.data(), static_cast<int>(s.logits.size()),
                           std::span<const int32_t>(s.history).first(s.n_fed));
}

const std::string& Session::grammar_error() const { return impl_->sampler->grammar_error(); }

Status Session::reserve(int64_t n_tokens, int64_t at_most) {
  return impl_->state->reserve(n_tokens, at_most);
}

SessionStats Session::stats() const {
  // The multi-state as the fed tokens leave it (settling changes no token, no logit; a failure
  // leaves the drafts outstanding and the figures then count them).
  if (impl_->spec && impl_->spec->n_outstanding() > 0 && impl_->engine) {
    (void)const_cast<Impl&>(*impl_).settle();
  }
  const kv::MultiState& st = *impl_->state;
  SessionStats k;
  if (impl_->spec) k.speculation = impl_->spec->stats();
  k.policy = st.policy().label();
  k.budget = st.budget();
  k.cache = impl_->cache.label();
  k.kv_type = st.kv_type().label();
  // The drafter's own K/V (SpeculationStats::draft_kv_bytes) is memory this session holds.
  k.kv_capacity = st.bytes() + k.speculation.draft_kv_bytes;
  k.n_seen = st.n_seen();
  for (const runtime::QueuedImage& q : impl_->images) {
    if (q.start + q.image.n_tokens > impl_->n_fed) break;
    ++k.n_images;
    k.n_image_tokens += q.image.n_tokens;
  }
  k.keep_images = st.keep_images();
  k.n_images_held = st.n_images_held();
  for (int il = 0; il < st.n_layer(); ++il) {
    const kv::LayerState& l = st.layer(il);
    const bool window = l.window() > 0;
    k.layers.push_back({l.n_held(), l.n_evicted(), window ? "window" : "bounded"});
    // A layer's memory is its slots': the held ones' share of it.
    const uint64_t held = l.n_slot() > 0 ? l.bytes() / l.n_slot() * l.n_held() : 0;
    k.kv_held += held;
    auto kind = std::find_if(k.kinds.begin(), k.kinds.end(),
                             [&](const StateKindStats& s) { return s.kind == k.layers.back().kind; });
    if (kind == k.kinds.end()) {
      kind = window ? k.kinds.insert(k.kinds.end(), StateKindStats{.kind = "window", .limit = 0})
                    : k.kinds.insert(k.kinds.begin(),
                                     StateKindStats{.kind = "bounded", .limit = l.budget()});
    }
    ++kind->n_layer;
    if (window) kind->limit = std::max(kind->limit, l.window());
    kind->max_held = std::max(kind->max_held, l.n_held());
    kind->rows += l.n_held_total();
    kind->image_rows += st.image_rows(il);
    kind->bytes += l.bytes();
    kind->held_bytes += held;
  }
  // Every layer in the model's order where some layer holds no K/V of its own: a recurrent
  // layer ("recurrent": no K/V rows, none evicted) or a shared-K/V one ("shared": Gemma 4
  // E2B/E4B's last layers, which read an earlier layer's K/V and hold nothing; what they read
  // is bounded by the owner's policy alone), or one without a token mixer ("none": Nemotron-H's
  // feed-forward layers, which keep nothing). A layer that attends beside a recurrent mixer
  // (Falcon-H1) is listed with its K/V, its recurrent state counted in the "recurrent" kind.
  // A driven session (no engine) knows no order: its recurrent layers follow.
  const model::ModelConfig* c = impl_->engine ? &EngineAccess::model(*impl_->engine).config() : nullptr;
  const int n_shared = c != nullptr ? c->n_shared_kv_layers() : 0;
  if (st.n_recurrent() > 0 || n_shared > 0) {
    std::vector<LayerStats> attention = std::move(k.layers);
    k.layers.clear();
    size_t ia = 0;
    for (int il = 0; c != nullptr && il < c->n_layer; ++il) {
      if (c->recurrent(il)) {
        k.layers.push_back({.kind = "recurrent"});
      } else if (c->shared_kv(il)) {
        k.layers.push_back({.kind = "shared"});
      } else if (c->ffn_only(il)) {
        k.layers.push_back({.kind = "none"});
      } else if (ia < attention.size()) {
        k.layers.push_back(std::move(attention[ia++]));
      }
    }
    if (c == nullptr) {
      k.layers = std::move(attention);
      k.layers.resize(k.layers.size() + static_cast<size_t>(st.n_recurrent()),
                      LayerStats{.kind = "recurrent"});
    }
  }
  if (n_shared > 0) k.kinds.push_back({.kind = "shared", .n_layer = n_shared, .limit = 0});
  if (st.n_recurrent() > 0) {
    const uint64_t b = st.recurrent_bytes();
    k.kv_held += b;
    k.kinds.push_back({.kind = "recurrent",
                       .n_layer = st.n_recurrent(),
                       .limit = 0,
                       .bytes = b,
                       .held_bytes = b});
  }
  return k;
}

std::unique_ptr<Session> Session::clone() const {
  const Impl& o = *impl_;
  // The copy continues from the fed tokens alone (see stats()).
  if (o.spec && o.spec->n_outstanding() > 0 && o.engine) (void)const_cast<Impl&>(o).settle();
  auto s = std::make_unique<Impl>();
  s->engine = o.engine;
  s->tokenizer = o.tokenizer;
  s->cache = o.cache;
  s->sampling = o.sampling;
  s->n_batch = o.n_batch;
  s->state = o.state->clone();
  s->sampler = std::make_unique<runtime::Sampler>(*o.sampler);
  s->history = o.history;
  s->images = o.images;
  s->n_fed = o.n_fed;
  s->logits = o.logits;
  s->has_logits = o.has_logits;
  if (o.spec) s->spec = std::make_unique<runtime::Speculation>(*o.spec);
  return runtime::SessionAccess::make(std::move(s));
}

Status Session::reset() {
  Impl& s = *impl_;
  TOVA_ASSIGN_OR_RETURN(s.state, runtime::make_state(EngineAccess::model(*s.engine), s.cache, 0,
                                                     /*runs_cuts=*/false,
                                                     s.engine->max_image_tokens()));
  if (s.spec) s.spec->clear();
  s.history.clear();
  s.images.clear();
  s.n_fed = 0;
  s.has_logits = false;
  return ok_status();
}

Result<uint64_t> Session::save(const std::string& path, const SaveOptions& o) const {
  if (n_pending() != 0) {
    return make_error("cannot save '{}': {} tokens are queued and not fed", path, n_pending());
  }
  if (impl_->spec && impl_->spec->n_outstanding() > 0) {
    TOVA_RETURN_IF_ERROR(const_cast<Impl&>(*impl_).settle());
  }
  runtime::SessionData d = runtime::session_data(*this, o.unfed);
  d.note = o.note;
  return runtime::save_session(path, EngineAccess::model(*impl_->engine), d, o.sync);
}

namespace runtime {

Result<std::unique_ptr<Session>> resume_session(const Engine& e, const SessionOptions& o,
                                                SessionData d) {
  TOVA_RETURN_IF_ERROR(validate(o.sampling));
  if (d.state == nullptr) return make_error("session data without a multi-state");
  if (const KvFormat to = o.kv_override.applied_to(d.state->kv_type());
      !(to == d.state->kv_type())) {
    TOVA_RETURN_IF_ERROR(check_kv_rotation(to));
    TOVA_ASSIGN_OR_RETURN(d.state, d.state->with_kv_type(to));
  }
  auto s = std::make_unique<Session::Impl>();
  s->engine = &e;
  s->tokenizer = e.has_tokenizer() ? &EngineAccess::tokenizer(e) : nullptr;
  // The cache options are the restored state's (a reset starts the same kind of cache again);
  // only the reserve comes from the caller.
  s->cache = o.cache;
  s->cache.policy = d.state->policy();
  s->cache.kv_type = d.state->kv_type();
  s->cache.positions = d.state->positions();
  s->cache.keep_images = d.state->keep_images();
  if (d.state->keep_images()) s->cache.max_kept_images = d.state->max_kept_images();
  s->cache.prefill =
      d.state->max_new() > 1 ? PrefillMode{.chunk = d.state->max_new()} : PrefillMode{};
  s->sampling = o.sampling;
  s->n_batch = std::max(1, o.n_batch);
  s->state = std::move(d.state);
  TOVA_ASSIGN_OR_RETURN(s->spec, make_speculation(e, o.speculative, s->cache));
  TOVA_ASSIGN_OR_RETURN(s->sampler, make_sampler(e, o.sampling));
  if (!d.rng_state.empty()) TOVA_RETURN_IF_ERROR(s->sampler->set_rng_state(d.rng_state));
  s->history = std::move(d.history);
  // A sampled token not fed yet is the history's last token, queued again.
  const bool pending = d.pending >= 0;
  if (pending && (s->history.empty() || s->history.back() != d.pending)) {
    s->history.push_back(d.pending);
  }
  s->n_fed = static_cast<int64_t>(s->history.size()) - (pending ? 1 : 0);
  s->logits.assign(e.n_vocab(), 0.0f);
  if (!d.logits.empty()) {
    if (d.logits.size() != s->logits.size()) {
      return make_error("session logits have {} entries, the model's vocabulary {}",
                        d.logits.size(), s->logits.size());
    }
    s->logits = std::move(d.logits);
    s->has_logits = !pending;
  }
  return SessionAccess::make(std::move(s));
}

std::unique_ptr<Session> driven_session(const tok::Tokenizer& tk, int n_vocab,
                                        std::unique_ptr<kv::MultiState> state,
                                        const SamplerParams& sampling) {
  auto s = std::make_unique<Session::Impl>();
  s->tokenizer = &tk;
  s->sampling = sampling;
  s->state = std::move(state);
  s->sampler = std::make_unique<Sampler>(sampling);
  s->logits.assign(n_vocab, 0.0f);
  return SessionAccess::make(std::move(s));
}

void mark_fed(Session& session, int64_t n, const float* logits) {
  Session::Impl& s = SessionAccess::impl(session);
  s.n_fed += n;
  s.has_logits = logits != nullptr;
  if (logits != nullptr) std::copy_n(logits, s.logits.size(), s.logits.begin());
}

Status settle(const Session& session) {
  Session::Impl& s = const_cast<Session::Impl&>(SessionAccess::impl(session));
  if (!s.spec || s.spec->n_outstanding() == 0 || !s.engine) return ok_status();
  return s.settle();
}

Status set_speculation(Session& session, const SpeculativeOptions& o) {
  Session::Impl& s = SessionAccess::impl(session);
  const auto same = [](const SpeculativeOptions& a, const SpeculativeOptions& b) {
    return a.type == b.type && a.n_max == b.n_max && a.n_min == b.n_min && a.p_min == b.p_min &&
           a.ngram_size_n == b.ngram_size_n && a.ngram_size_m == b.ngram_size_m;
  };
  if (s.spec ? same(s.spec->options(), o) : !o.on()) return ok_status();
  TOVA_RETURN_IF_ERROR(settle(session));
  TOVA_ASSIGN_OR_RETURN(s.spec, make_speculation(*s.engine, o, s.cache));
  return ok_status();
}

SessionData session_data(const Session& session, int32_t unfed) {
  const Session::Impl& s = SessionAccess::impl(session);
  SessionData d;
  d.state = s.state->clone();
  d.history.assign(s.history.begin(), s.history.begin() + s.n_fed);
  if (unfed >= 0) d.history.push_back(unfed);
  if (d.history.size() > static_cast<size_t>(kSessionHistory)) {
    d.history.erase(d.history.begin(), d.history.end() - kSessionHistory);
  }
  d.pending = unfed;
  if (s.has_logits || unfed >= 0) d.logits = s.logits;
  d.rng_state = s.sampler->rng_state();
  return d;
}

}  // namespace runtime
}  // namespace tova
