// Perplexity sweeps: many (policy, budget) configurations scored on the same chunks of text,
// all of them fed through shared forward passes. Every prediction of a chunk is scored (ctx - 1
// per chunk), unlike llama-perplexity, which scores only the second half of each chunk.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"
#include "model/model.h"

namespace tova::eval {

struct ChunkOptions {
  int ctx = 512;
  // BOS id: each chunk is BOS followed by the next ctx - 1 ids. -1: ids are cut into chunks
  // of ctx as given.
  int32_t bos = -1;
  int max_chunks = 0;  // 0: every full chunk
};

// Cuts ids into full chunks; an error if not even one chunk fits.
Result<std::vector<std::vector<int32_t>>> make_chunks(std::span<const int32_t> ids,
                                                      const ChunkOptions& o);

// `full` once (if listed) followed by every other policy x every budget, in the order given.
// Errors: no policies, an unknown policy, a budget < 1 or above ctx, a policy listed twice,
// bounded policies without budgets, or any policy's own check (e.g. sink:N with N >= k).
Result<std::vector<kv::PolicySpec>> sweep_configs(std::span<const std::string> policies,
                                                  std::span<const int> budgets, int ctx);

struct SweepProgress {
  int64_t steps_done = 0;  // token steps fed, summed over configurations
  int64_t steps_total = 0;
  double seconds = 0;
};

struct SweepOptions {
  std::vector<kv::PolicySpec> configs;  // at most one unbounded (full)
  KvFormat kv_type;  // every configuration's K/V storage (f32 unless given)
  // Several storage formats: every configuration runs in each (policy-major order: each
  // configuration's formats side by side in SweepResult::configs), and KL / top-1 compare with
  // `full` in the FIRST format. Empty: kv_type alone.
  std::vector<KvFormat> kv_types;
  kv::PositionMode positions = kv::PositionMode::kAbsolute;  // every configuration's
  int n_batch = 32;     // positions per sequence and forward call
  bool batched = true;  // false: each configuration alone in its own forward calls
  // Batched sweeps: until a bounded configuration first evicts, its multi-state equals that of
  // the chunk's largest configuration in its format (`full`), so it rides along with it
  // (model::Follower)
  // instead of computing the same numbers again; it joins the batch at the last micro-batch
  // boundary before its budget. The scores are bit-identical either way.
  bool share_prefix = true;
  // Sequences (chunk x configuration) per forward call when batching; several chunks run
  // together when there are few configurations. 0: automatic.
  int max_seqs = 0;
  bool keep_token_nll = false;  // fill ConfigResult::token_nll (tests)
  std::function<void(const SweepProgress&)> on_progress;
};

struct ConfigResult {
  kv::PolicySpec policy;
  KvFormat kv_type;
  double mean_nll = 0;
  double ppl = 0;
  double ppl_se = 0;  // delta method over per-chunk means; NaN with one chunk
  // Against `full` (only when it is in the sweep; in the first format when there are several):
  // mean and 99th percentile over predictions of KL(p_full || p_config), and the share of
  // predictions with the same argmax.
  std::optional<double> kl_mean, kl_p99, top1_agree;
  // Paired against `full` on the same chunks: the mean over chunks of (this configuration's
  // mean NLL - full's) and its standard error (sd of the differences / sqrt(chunks); NaN with
  // one chunk). The chunks' difficulty, which both share, cancels out.
  std::optional<double> dnll_mean, dnll_se;
  std::vector<double> nll_by_position;  // [ctx - 1], mean over chunks
  std::vector<double> nll_by_chunk;     // [n_chunks], mean over the chunk's predictions
  std::vector<double> token_nll;        // [n_chunks][ctx - 1], if keep_token_nll
};

struct SweepResult {
  int ctx = 0;
  int n_chunks = 0;
  int64_t n_predictions = 0;  // per configuration: n_chunks * (ctx - 1)
  int64_t n_forward_calls = 0;
  // (configuration, chunk, position) steps that rode along with the chunk's largest
  // configuration instead of being computed (SweepOptions::share_prefix).
  int64_t n_shared_steps = 0;
  double seconds = 0;
  std::vector<ConfigResult> configs;  // in SweepOptions::configs order (x kv_types)
  bool several_kv_types = false;      // configurations differ in their K/V format
  // "tova k=64" or, with several formats, "tova k=64 q8_0"; the policy's label alone for `full`.
  std::string name(const ConfigResult& c) const;
};

// Scores every configuration on every chunk (all chunks have the same length) with exact
// per-token semantics.
Result<SweepResult> run_sweep(const model::Model& m, ThreadPool& pool,
                              std::span<const std::vector<int32_t>> chunks, const SweepOptions& o);

}  // namespace tova::eval
