// How a sequence's multi-state is configured (policy, budget, storage type, prefill mode), and
// the parsing of those options from text, shared by every front-end (`run`, `chat`, `serve`'s
// flags and its per-request fields).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"
#include "kv/positions.h"
#include "model/model.h"

namespace tova::runtime {

// How a prompt joins the multi-state.
struct PrefillMode {
  int chunk = 0;     // 0: exact (token-by-token semantics); C > 0: chunk:C
  bool inf = false;  // chunk:inf: the whole prompt is one chunk
  std::string label() const;
  bool exact() const { return chunk == 0 && !inf; }
};
Result<PrefillMode> parse_prefill(std::string_view text);  // "exact" | "chunk:C" | "chunk:inf"
Result<kv::KvType> parse_kv_type(std::string_view text);   // "f32" | "f16"

struct CacheOptions {
  kv::PolicySpec policy;
  kv::KvType kv_type = kv::KvType::kF32;
  PrefillMode prefill;
  // Slots allocated up front, the tokens the caller expects the sequence to hold (as llama.cpp
  // sizes its context; a bounded pool at most k + chunk). A pool that fills its allocation
  // doubles it and copies every state, a stall of a whole-cache copy inside one step;
  // reserving what a run will hold means that never happens within it. 0: a small first
  // allocation.
  int64_t reserve = 0;
  // Bytes a bounded multi-state may reach (k + chunk slots per layer): a larger budget is
  // refused when the state is made. 0: the machine's physical memory.
  uint64_t memory_limit = 0;
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  // "tova k=256 exact f32": equal labels mean interchangeable states (prefix reuse keys on it).
  std::string label() const;
};

// The textual options together; each error names the option at fault.
Result<CacheOptions> parse_cache_options(std::string_view policy, int budget,
                                         std::string_view prefill, std::string_view kv_type,
                                         std::string_view positions = "absolute");

// The most tokens that join a layer before the policy evicts, for a prompt of n_prompt tokens.
int max_new_for(const PrefillMode& p, int64_t n_prompt);

// K/V bytes a sequence under `o` allocates: its fixed size when bounded, or n_ctx tokens'
// worth when unbounded (what a server reserves for it).
uint64_t reserve_bytes(const model::Model& m, const CacheOptions& o, int64_t n_prompt,
                       int64_t n_ctx);

}  // namespace tova::runtime
