// A sequence: one multi-state fed through the model, with the prefill modes of
// spec/POLICIES.md (exact, chunk:C, chunk:inf) and generation on top.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "model/model.h"
#include "runtime/cache_options.h"
#include "runtime/sampler.h"

namespace tova::runtime {

// A multi-state for this model, sized for a prompt of n_prompt tokens (chunk:inf needs it).
Result<std::unique_ptr<kv::MultiState>> make_state(const model::Model& m, const CacheOptions& o,
                                                   int64_t n_prompt);

// Feeds tokens to one sequence, in micro-batches of at most n_batch tokens (exact), or in
// chunks of C (chunk:C). If last_logits is given, it receives the last token's logits.
Status feed(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
            kv::MultiState& state, std::span<const int32_t> tokens, int n_batch,
            float* last_logits);

struct LayerKvStats {
  int n_held = 0;
  int64_t n_evicted = 0;
};

struct KvStats {
  std::string policy;  // "tova"
  int budget = -1;     // -1: unbounded
  uint64_t bytes = 0;  // K/V memory allocated
  int64_t n_seen = 0;  // tokens fed
  std::vector<LayerKvStats> layers;
};
KvStats kv_stats(const kv::MultiState& s);

struct GenerateOptions {
  int n_predict = 128;
  SamplerParams sampling;
  CacheOptions cache;
  int n_batch = 512;
  bool stop_at_eog = true;
  // Session file (runtime/session_file.h): if it exists, the sequence resumes from it (the
  // prompt, which may then be empty, continues the saved text); saved at the end either way.
  std::string session;
};

struct GenerateStats {
  int64_t n_prompt = 0;
  int64_t n_generated = 0;
  double prompt_seconds = 0;
  double decode_seconds = 0;
  KvStats kv;
  // With GenerateOptions::session: reading and decoding the file it resumed from (0 when it
  // started fresh), and encoding and writing it at the end; its size in bytes.
  double session_load_seconds = 0;
  double session_save_seconds = 0;
  int64_t session_loaded_bytes = 0;
  int64_t session_saved_bytes = 0;
};

// Prefills the prompt, then samples up to n_predict tokens; on_token(id) is called for each
// generated token and may return false to stop. is_eog(id) says when generation ends.
Result<GenerateStats> generate(const model::Model& m, ThreadPool& pool,
                               std::span<const int32_t> prompt, const GenerateOptions& o,
                               const std::function<bool(int32_t)>& is_eog,
                               const std::function<bool(int32_t)>& on_token);

}  // namespace tova::runtime
