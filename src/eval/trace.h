// Which tokens a policy keeps: one sequence fed token by token, recording for every layer, KV
// head and position how long the token stayed in the multi-state.
//
// Survival, precisely: the token at position p joins every layer at step p (the step that feeds
// it) and takes part in that step's attention. If the policy evicts it at step e >= p (after
// step e's attention), later tokens p+1..e saw it, and its survival is e - p (0 when it is
// evicted at its own step). A token never evicted is "alive at end" and its survival is
// T - 1 - p for T tokens fed: the later tokens that saw it. So survival is always the number of
// later tokens whose attention included the token, and for window:k it is k for every token
// that is evicted.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"
#include "model/model.h"

namespace tova::eval {

struct TraceOptions {
  kv::PolicySpec policy;
  KvFormat kv_type;  // K/V storage (f32 unless given)
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  // Age (t - pos) from which a held state counts as "far" in TraceResult::far_share, e.g. the
  // model's training context; 0: not computed.
  int64_t far_age = 0;
  std::function<void(int64_t done, int64_t total)> on_progress;  // tokens fed
};

struct TraceResult {
  std::string policy;  // label, e.g. "sink:4"
  int budget = -1;     // -1: unbounded
  int n_layer = 0;
  int n_head_kv = 0;
  int64_t n_tokens = 0;  // T
  std::vector<int32_t> tokens;
  // [n_layer][n_head_kv][T]. Layer-wise policies give every KV head of a layer the same row.
  std::vector<int32_t> survival;
  std::vector<uint8_t> alive_at_end;
  std::vector<double> layer_survival;        // [n_layer][T], mean over KV heads
  std::vector<double> mean_survival;         // [T], mean over layers of layer_survival
  std::vector<double> first_token_survival;  // [n_layer], position 0, mean over KV heads
  // Share of the held states that are among the k/2 most recent positions (t - k/2 < pos <= t)
  // after step t, averaged over KV heads and over the steps t >= k (the steps that evict).
  // NaN (here and in mean_age, far_share) when unbounded or when no step evicted.
  std::vector<double> recent_share;  // [n_layer]
  // Per layer over every (KV head, position) the policy evicted (alive-at-end tokens are left
  // out: their survival is cut short by the end of the text). NaN when nothing was evicted.
  std::vector<double> survival_median;  // [n_layer]
  std::vector<double> survival_p90;     // [n_layer]
  // Per layer over every (KV head, position): the share evicted at their own step (survival 0)
  // and the share that survived at least 2k later tokens (alive-at-end ones included).
  std::vector<double> evicted_on_arrival;  // [n_layer]
  std::vector<double> kept_over_2k;        // [n_layer]
  double recent_share_mean = 0;            // over layers
  // Over the same steps and KV heads: the mean age t - pos of the held states, and the share of
  // held states at least TraceOptions::far_age old (NaN if far_age is 0).
  std::vector<double> mean_age;   // [n_layer]
  std::vector<double> far_share;  // [n_layer]
  double seconds = 0;

  size_t index(int layer, int head_kv, int64_t pos) const {
    return (static_cast<size_t>(layer) * n_head_kv + head_kv) * n_tokens + pos;
  }
};

Result<TraceResult> run_trace(const model::Model& m, ThreadPool& pool,
                              std::span<const int32_t> tokens, const TraceOptions& o);

// Token strings ranked by their mean survival (over layers, heads and occurrences), longest
// first; ties by more occurrences, then by text.
struct TokenSurvival {
  std::string text;
  double mean_survival = 0;
  int count = 0;
};
std::vector<TokenSurvival> longest_kept(const TraceResult& r,
                                        const std::function<std::string(int32_t)>& text, int n);

}  // namespace tova::eval
