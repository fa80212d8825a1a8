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
#include "tova/eval/ppl.h"
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

// Scores every configuration on every chunk (all chunks have the same length) with exact
// per-token semantics.
Result<SweepResult> run_sweep(const model::Model& m, ThreadPool& pool,
                              std::span<const std::vector<int32_t>> chunks, const SweepOptions& o);

}  // namespace tova::eval
