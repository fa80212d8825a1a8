#include "runtime/sequence.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/timer.h"
#include "runtime/session_file.h"

namespace tova::runtime {

std::string PrefillMode::label() const {
  if (inf) return "chunk:inf";
  return chunk > 0 ? "chunk:" + std::to_string(chunk) : "exact";
}

Result<PrefillMode> parse_prefill(std::string_view text) {
  PrefillMode m;
  if (text == "exact") return m;
  if (text == "chunk:inf") {
    m.inf = true;
    return m;
  }
  if (text.substr(0, 6) == "chunk:") {
    const std::string_view a = text.substr(6);
    int c = 0;
    auto [p, ec] = std::from_chars(a.data(), a.data() + a.size(), c);
    if (ec == std::errc() && p == a.data() + a.size() && c >= 1 && c <= (1 << 20)) {
      m.chunk = c;
      return m;
    }
  }
  return make_error("invalid prefill mode '{}' (valid: exact, chunk:C with C >= 1, chunk:inf)",
                    text);
}

Result<kv::KvType> parse_kv_type(std::string_view text) {
  if (text == "f32") return kv::KvType::kF32;
  if (text == "f16") return kv::KvType::kF16;
  return make_error("invalid KV type '{}' (valid: f32, f16)", text);
}

namespace {

int max_new_for(const PrefillMode& p, int64_t n_prompt) {
  if (p.inf) return static_cast<int>(std::max<int64_t>(1, n_prompt));
  return p.chunk > 0 ? p.chunk : 1;
}

}  // namespace

Result<std::unique_ptr<kv::MultiState>> make_state(const model::Model& m, const CacheOptions& o,
                                                   int64_t n_prompt) {
  kv::MultiStateOptions so = m.state_options(o.policy, o.kv_type, max_new_for(o.prefill, n_prompt));
  if (!o.policy.bounded()) {
    const int64_t want = std::max(o.reserve, n_prompt);
    if (want > kv::kMaxUnboundedReserve) {
      return make_error("cannot reserve a cache of {} tokens (at most {})", want,
                        kv::kMaxUnboundedReserve);
    }
    so.initial_slots = static_cast<int>(std::max<int64_t>(want, so.initial_slots));
  }
  so.positions = o.positions;
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
  TOVA_RETURN_IF_ERROR(validate(o.sampling));
  const bool resume = !o.session.empty() && std::filesystem::exists(o.session);
  if (prompt.empty() && !resume) {
    return make_error("the prompt is empty (no tokens to start from)");
  }
  const int n_vocab = m.config().n_vocab;
  std::vector<float> logits(n_vocab);
  Sampler sampler(o.sampling);
  std::vector<int32_t> history, to_feed(prompt.begin(), prompt.end());
  std::unique_ptr<kv::MultiState> state;
  if (resume) {
    TOVA_ASSIGN_OR_RETURN(SessionData d, load_session(o.session, m));
    if (!d.rng_state.empty()) TOVA_RETURN_IF_ERROR(sampler.set_rng_state(d.rng_state));
    if (d.pending >= 0) to_feed.insert(to_feed.begin(), d.pending);
    if (to_feed.empty() && d.logits.empty()) {
      return make_error("session '{}' has no logits to continue from; give a prompt", o.session);
    }
    if (!d.logits.empty()) logits = d.logits;
    history = std::move(d.history);
    state = std::move(d.state);
  } else {
    CacheOptions cache = o.cache;
    cache.reserve =
        std::max<int64_t>(cache.reserve, static_cast<int64_t>(prompt.size()) + o.n_predict);
    TOVA_ASSIGN_OR_RETURN(state, make_state(m, cache, static_cast<int64_t>(prompt.size())));
  }
  model::ForwardScratch scratch;
  GenerateStats st;
  st.n_prompt = static_cast<int64_t>(to_feed.size());
  Timer t;
  TOVA_RETURN_IF_ERROR(feed(m, pool, scratch, *state, to_feed, o.n_batch, logits.data()));
  st.prompt_seconds = t.seconds();

  history.insert(history.end(), prompt.begin(), prompt.end());
  int32_t pending = -1;  // the last sampled token, not fed yet
  t.reset();
  for (int i = 0; i < o.n_predict; ++i) {
    const int32_t id = sampler.sample(logits.data(), n_vocab, history);
    history.push_back(id);
    pending = id;
    ++st.n_generated;
    if (o.stop_at_eog && is_eog && is_eog(id)) break;
    if (!on_token(id)) break;
    if (i + 1 == o.n_predict) break;
    const model::BatchToken bt{.token = id, .state = state.get(), .logits = true};
    TOVA_RETURN_IF_ERROR(m.forward({&bt, 1}, pool, scratch, logits.data()));
    pending = -1;
  }
  st.decode_seconds = t.seconds();
  st.kv = kv_stats(*state);
  if (!o.session.empty()) {
    if (history.size() > static_cast<size_t>(kSessionHistory)) {
      history.erase(history.begin(), history.end() - kSessionHistory);
    }
    SessionData d{.state = std::move(state),
                  .history = std::move(history),
                  .pending = pending,
                  .logits = std::move(logits),
                  .rng_state = sampler.rng_state()};
    TOVA_RETURN_IF_ERROR(save_session(o.session, m, d));
  }
  return st;
}

}  // namespace tova::runtime
