// Eviction traces (tova trace): which tokens a policy keeps, and for how long.
// Part of the evaluation API (tova/eval.h); each takes a loaded Engine and returns plain records.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tova/engine.h"
#include "tova/kv_format.h"
#include "tova/options.h"
#include "tova/policy_spec.h"
#include "tova/position_mode.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Traces (tova trace) ----------------------------------------------------------------------
// Which tokens a policy keeps: one sequence fed token by token, recording for every layer, KV
// head and position how long the token stayed in the multi-state. Survival of the token at
// position p: the number of later tokens whose attention included it (e - p if the policy
// evicted it at step e, after that step's attention; T - 1 - p if it is alive at the end).

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

// Token strings ranked by their mean survival (over layers, heads and occurrences), longest
// first; ties by more occurrences, then by text.
struct TokenSurvival {
  std::string text;
  double mean_survival = 0;
  int count = 0;
};

struct EvictionComparison {
  std::vector<double> differ;   // [n_layer]; NaN where neither run evicted
  std::vector<double> overlap;  // [n_layer]; NaN where the reference never evicted
  // [n_layer]: the first step at which some KV head's evictions differ; -1: never.
  std::vector<int64_t> first_difference;
  double differ_mean = 0;   // over layers (and KV heads, pooled)
  double overlap_mean = 0;  // over layers
};

// What `tova trace` reports: a trace, and the same trace in each other K/V format with its
// evictions compared to the first.
struct TraceRun {
  TraceResult trace;
  std::vector<KvFormat> compared;                // the other formats
  std::vector<EvictionComparison> comparisons;  // [compared.size()]
};

struct TraceRunOptions {
  // The input: `text` (BOS + its tokens) or `tokens` (fed as given) when it is not empty; the
  // labels name them in the records and the title.
  std::string text;
  std::vector<int32_t> tokens;
  std::string text_label;
  std::string tokens_label;
  std::string model_label;  // empty: the engine's path
  CacheOptions cache;       // policy, K/V type and positions; the prefill must be exact
  int ctx = 0;              // tokens fed at most (0: the training context, or 512)
  int64_t far_age = 0;      // TraceOptions::far_age (0: the training context)
  int top = 20;             // token strings kept longest to report
  std::vector<KvFormat> compare;  // trace again in each and compare the evictions
  bool f32_activations = false;   // recorded in the header (the engine was loaded with it)
  std::function<void(int64_t done, int64_t total)> on_progress;  // tokens fed
};

struct TraceReport {
  std::string title;  // "MODEL on TEXT: tova, k = 64, 512 tokens"
  TraceRun run;
  int ctx = 0;
  int64_t far_age = 0;
  std::vector<TokenSurvival> longest;  // the `top` token strings kept longest
  std::string json;  // trace.json's text
};

Result<TraceReport> run_trace(const Engine& engine, const TraceRunOptions& o);

}  // namespace tova::eval
