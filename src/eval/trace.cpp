#include "eval/trace.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/timer.h"
#include "eval/nll.h"
#include "runtime/sequence.h"
#include "model/token_ids.h"

namespace tova::eval {

namespace {

// What the trace gathers while the tokens go through, step by step.
struct TraceTally {
  // The last step after which each (layer, head, position) was still held; -1: never.
  std::vector<int64_t> last_held;
  // Per layer, summed over the steps counted (t >= k): the share of held states among the
  // k/2 most recent positions, their mean age, and the share at least far_age old.
  std::vector<double> recent_sum, age_sum, far_sum;
  int64_t n_recent_steps = 0;
};

// After step t: which states every layer and head holds.
void tally_step(const kv::MultiState& ms, const TraceResult& r, const TraceOptions& o, int64_t t,
                TraceTally& y) {
  const int L = r.n_layer, H = r.n_head_kv, k = r.budget;
  const bool count_recent = k > 0 && t >= k;
  const int64_t recent_from = t - k / 2 + 1;
  for (int il = 0; il < L; ++il) {
    const kv::LayerState& ls = ms.layer(il);
    const int n_slot = ls.n_slot();
    double share = 0, age = 0, far = 0;
    for (int g = 0; g < H; ++g) {
      const int64_t* pos = ls.pos() + static_cast<size_t>(g) * n_slot;
      int n_held = 0, n_recent = 0, n_far = 0;
      int64_t age_total = 0;
      for (int s = 0; s < n_slot; ++s) {
        if (pos[s] < 0) continue;
        y.last_held[r.index(il, g, pos[s])] = t;
        ++n_held;
        if (pos[s] >= recent_from) ++n_recent;
        age_total += t - pos[s];
        if (o.far_age > 0 && t - pos[s] >= o.far_age) ++n_far;
      }
      if (count_recent && n_held > 0) {
        share += static_cast<double>(n_recent) / n_held;
        age += static_cast<double>(age_total) / n_held;
        far += static_cast<double>(n_far) / n_held;
      }
    }
    if (count_recent) {
      y.recent_sum[il] += share / H;
      y.age_sum[il] += age / H;
      y.far_sum[il] += far / H;
    }
  }
  if (count_recent) ++y.n_recent_steps;
}

// Each state's survival (steps it was held after its own) and whether it was alive at the end,
// per layer and over layers.
void summarize_survival(const std::vector<int64_t>& last_held, TraceResult& r) {
  const int L = r.n_layer, H = r.n_head_kv;
  const int64_t T = r.n_tokens;
  r.survival.resize(last_held.size());
  r.alive_at_end.resize(last_held.size());
  r.layer_survival.assign(static_cast<size_t>(L) * T, 0.0);
  r.mean_survival.assign(T, 0.0);
  for (int il = 0; il < L; ++il) {
    for (int g = 0; g < H; ++g) {
      for (int64_t p = 0; p < T; ++p) {
        const size_t i = r.index(il, g, p);
        const int64_t lh = last_held[i];
        const bool alive = lh == T - 1;
        // Held after steps p..lh, so evicted at step lh + 1 and seen by tokens p+1..lh+1.
        const int64_t surv = alive ? T - 1 - p : (lh < p ? 0 : lh + 1 - p);
        r.survival[i] = static_cast<int32_t>(surv);
        r.alive_at_end[i] = alive ? 1 : 0;
        r.layer_survival[static_cast<size_t>(il) * T + p] += static_cast<double>(surv) / H;
      }
    }
    for (int64_t p = 0; p < T; ++p) {
      r.mean_survival[p] += r.layer_survival[static_cast<size_t>(il) * T + p] / L;
    }
    r.first_token_survival.push_back(r.layer_survival[static_cast<size_t>(il) * T]);
  }
}

// Per layer: the median and 90th percentile survival of evicted states, the share evicted on
// arrival and the share kept at least 2k steps.
void summarize_evictions(TraceResult& r) {
  const int L = r.n_layer, H = r.n_head_kv, k = r.budget;
  const int64_t T = r.n_tokens;
  for (int il = 0; il < L; ++il) {
    std::vector<float> evicted;
    int64_t n_arrival = 0, n_long = 0;
    for (int g = 0; g < H; ++g) {
      for (int64_t p = 0; p < T; ++p) {
        const size_t i = r.index(il, g, p);
        if (!r.alive_at_end[i]) {
          evicted.push_back(static_cast<float>(r.survival[i]));
          if (r.survival[i] == 0) ++n_arrival;
        }
        if (k > 0 && r.survival[i] >= 2 * static_cast<int64_t>(k)) ++n_long;
      }
    }
    r.survival_median.push_back(quantile(evicted, 0.5));
    r.survival_p90.push_back(quantile(evicted, 0.9));
    const double n = static_cast<double>(H) * static_cast<double>(T);
    r.evicted_on_arrival.push_back(static_cast<double>(n_arrival) / n);
    r.kept_over_2k.push_back(k > 0 ? static_cast<double>(n_long) / n : std::nan(""));
  }
}

}  // namespace

Result<TraceResult> run_trace(const model::Model& m, ThreadPool& pool,
                              std::span<const int32_t> tokens, const TraceOptions& o) {
  if (tokens.empty()) return make_error("no tokens to trace");
  if (o.policy.info == nullptr) return make_error("no KV policy given");
  TOVA_RETURN_IF_ERROR(model::check_token_ids(tokens, m.config().n_vocab, "tokens"));
  const int64_t T = static_cast<int64_t>(tokens.size());
  const CacheOptions co{
      .policy = o.policy, .kv_type = o.kv_type, .positions = o.positions};
  TOVA_ASSIGN_OR_RETURN(auto state, runtime::make_state(m, co, T));
  kv::MultiState& ms = *state;

  TraceResult r;
  r.policy = o.policy.label();
  r.budget = ms.budget();
  r.n_layer = ms.n_layer();
  r.n_head_kv = m.config().n_head_kv;
  r.n_tokens = T;
  r.tokens.assign(tokens.begin(), tokens.end());
  const int L = r.n_layer;
  TraceTally y;
  y.last_held.assign(static_cast<size_t>(L) * r.n_head_kv * T, -1);
  y.recent_sum.assign(L, 0.0);
  y.age_sum.assign(L, 0.0);
  y.far_sum.assign(L, 0.0);

  Timer timer;
  model::ForwardScratch scratch;
  for (int64_t t = 0; t < T; ++t) {
    // One token per call: the states are inspected after every step.
    TOVA_RETURN_IF_ERROR(runtime::feed(m, pool, scratch, ms, {&tokens[t], 1}, 1, nullptr));
    tally_step(ms, r, o, t, y);
    if (o.on_progress) o.on_progress(t + 1, T);
  }
  r.seconds = timer.seconds();

  summarize_survival(y.last_held, r);
  summarize_evictions(r);
  r.recent_share_mean = 0;
  const double steps = static_cast<double>(y.n_recent_steps);
  for (int il = 0; il < L; ++il) {
    const double s = y.n_recent_steps > 0 ? y.recent_sum[il] / steps : std::nan("");
    r.recent_share.push_back(s);
    r.recent_share_mean += s / L;
    r.mean_age.push_back(y.n_recent_steps > 0 ? y.age_sum[il] / steps : std::nan(""));
    r.far_share.push_back(y.n_recent_steps > 0 && o.far_age > 0 ? y.far_sum[il] / steps
                                                                : std::nan(""));
  }
  return r;
}

std::vector<TokenSurvival> longest_kept(const TraceResult& r,
                                        const std::function<std::string(int32_t)>& text, int n) {
  std::map<std::string, std::pair<double, int>> by_text;
  for (int64_t p = 0; p < r.n_tokens; ++p) {
    auto& e = by_text[text(r.tokens[p])];
    e.first += r.mean_survival[p];
    ++e.second;
  }
  std::vector<TokenSurvival> out;
  for (const auto& [t, e] : by_text) out.push_back({t, e.first / e.second, e.second});
  std::sort(out.begin(), out.end(), [](const TokenSurvival& a, const TokenSurvival& b) {
    if (a.mean_survival != b.mean_survival) return a.mean_survival > b.mean_survival;
    if (a.count != b.count) return a.count > b.count;
    return a.text < b.text;
  });
  if (n >= 0 && static_cast<int>(out.size()) > n) out.resize(n);
  return out;
}

}  // namespace tova::eval
