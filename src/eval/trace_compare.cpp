#include "eval/trace_compare.h"

#include <algorithm>
#include <cmath>

namespace tova::eval {
namespace {

// The step at which each position of one (layer, KV head) row was evicted; T: never (alive at
// the end). A survival s means evicted after step p + s (trace.h).
std::vector<int64_t> eviction_steps(const TraceResult& r, int layer, int head) {
  const int64_t T = r.n_tokens;
  std::vector<int64_t> e(static_cast<size_t>(T));
  for (int64_t p = 0; p < T; ++p) {
    const size_t i = r.index(layer, head, p);
    e[p] = r.alive_at_end[i] ? T : p + r.survival[i];
  }
  return e;
}

// held[t] = the positions p <= t with end[p] > t (held after step t).
std::vector<int64_t> held_counts(const std::vector<int64_t>& end) {
  const int64_t T = static_cast<int64_t>(end.size());
  std::vector<int64_t> d(static_cast<size_t>(T) + 1, 0);
  for (int64_t p = 0; p < T; ++p) {
    ++d[p];
    --d[std::min(end[p], T)];
  }
  for (int64_t t = 1; t < T; ++t) d[t] += d[t - 1];
  d.resize(static_cast<size_t>(T));
  return d;
}

}  // namespace

Result<EvictionComparison> compare_evictions(const TraceResult& ref, const TraceResult& other) {
  if (ref.tokens != other.tokens || ref.n_layer != other.n_layer ||
      ref.n_head_kv != other.n_head_kv || ref.budget != other.budget) {
    return make_error(
        "the traces to compare differ in tokens, layers, KV heads or budget ({} and {} tokens, "
        "{} and {} layers, k = {} and {})",
        ref.n_tokens, other.n_tokens, ref.n_layer, other.n_layer, ref.budget, other.budget);
  }
  const int64_t T = ref.n_tokens;
  EvictionComparison c;
  for (int il = 0; il < ref.n_layer; ++il) {
    int64_t n_any = 0, n_differ = 0, first = -1, n_overlap_steps = 0;
    double overlap_sum = 0;
    for (int g = 0; g < ref.n_head_kv; ++g) {
      const std::vector<int64_t> ea = eviction_steps(ref, il, g);
      const std::vector<int64_t> eb = eviction_steps(other, il, g);
      // A step's evicted sets differ iff some position was evicted there by one run only.
      std::vector<uint8_t> any(static_cast<size_t>(T), 0), differ(static_cast<size_t>(T), 0);
      std::vector<uint8_t> ref_evicts(static_cast<size_t>(T), 0);
      std::vector<int64_t> both(static_cast<size_t>(T));
      for (int64_t p = 0; p < T; ++p) {
        for (const int64_t e : {ea[p], eb[p]}) {
          if (e >= T) continue;
          any[e] = 1;
          if (ea[p] != eb[p]) differ[e] = 1;
        }
        if (ea[p] < T) ref_evicts[ea[p]] = 1;
        both[p] = std::min(ea[p], eb[p]);
      }
      const std::vector<int64_t> held_ref = held_counts(ea);
      const std::vector<int64_t> held_both = held_counts(both);
      for (int64_t t = 0; t < T; ++t) {
        n_any += any[t];
        n_differ += differ[t];
        if (differ[t] && (first < 0 || t < first)) first = t;
        if (ref_evicts[t] && held_ref[t] > 0) {
          overlap_sum += static_cast<double>(held_both[t]) / static_cast<double>(held_ref[t]);
          ++n_overlap_steps;
        }
      }
    }
    c.differ.push_back(n_any > 0 ? static_cast<double>(n_differ) / static_cast<double>(n_any)
                                 : std::nan(""));
    c.overlap.push_back(n_overlap_steps > 0 ? overlap_sum / static_cast<double>(n_overlap_steps)
                                            : std::nan(""));
    c.first_difference.push_back(first);
    c.differ_mean += c.differ.back() / ref.n_layer;
    c.overlap_mean += c.overlap.back() / ref.n_layer;
  }
  return c;
}

Result<TraceRun> run_trace_compared(const model::Model& m, ThreadPool& pool,
                                    std::span<const int32_t> tokens, const TraceOptions& o,
                                    std::span<const KvFormat> compare) {
  if (!compare.empty() && !o.policy.bounded()) {
    return make_error("comparing K/V types compares evictions; KV policy {} never evicts",
                      o.policy.label());
  }
  TraceRun run;
  TOVA_ASSIGN_OR_RETURN(run.trace, run_trace(m, pool, tokens, o));
  for (const KvFormat& f : compare) {
    TraceOptions other = o;
    other.kv_type = f;
    Result<TraceResult> r = run_trace(m, pool, tokens, other);
    if (!r.ok()) return make_error("K/V type {}: {}", f.label(), r.message());
    TOVA_ASSIGN_OR_RETURN(EvictionComparison c, compare_evictions(run.trace, *r));
    run.compared.push_back(f);
    run.comparisons.push_back(std::move(c));
  }
  return run;
}

nlohmann::ordered_json comparison_json(const TraceRun& run) {
  auto finite = [](double x) { return std::isfinite(x) ? nlohmann::ordered_json(x) : nullptr; };
  auto finite_list = [&finite](const std::vector<double>& v) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (double x : v) a.push_back(finite(x));
    return a;
  };
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i < run.comparisons.size(); ++i) {
    const EvictionComparison& c = run.comparisons[i];
    list.push_back({{"kv_type", run.compared[i].label()},
                    {"differ", finite_list(c.differ)},
                    {"overlap", finite_list(c.overlap)},
                    {"first_difference", c.first_difference},
                    {"differ_mean", finite(c.differ_mean)},
                    {"overlap_mean", finite(c.overlap_mean)}});
  }
  return list;
}

}  // namespace tova::eval
