// What a user chooses for a session: how its multi-state is kept (policy, budget, K/V storage,
// prefill mode, positions) and how it samples. Plain data; the parse_* functions read it from
// text (command-line flags, request fields, Python keywords), each error naming the option.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "kv/kv_type.h"
#include "kv/policy_registry.h"
#include "kv/positions.h"

namespace tova {

// How a prompt joins the multi-state (spec/POLICIES.md).
struct PrefillMode {
  int chunk = 0;     // 0: exact (token-by-token semantics); C > 0: chunk:C
  bool inf = false;  // chunk:inf: the whole prompt is one chunk
  std::string label() const;
  bool exact() const { return chunk == 0 && !inf; }
};
Result<PrefillMode> parse_prefill(std::string_view text);  // "exact" | "chunk:C" | "chunk:inf"
Result<kv::KvType> parse_kv_type(std::string_view text);   // "f32" | "f16"
std::string_view kv_type_name(kv::KvType type);            // "f32"

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
                                         std::string_view prefill = "exact",
                                         std::string_view kv_type = "f32",
                                         std::string_view positions = "absolute");

// The sampler chain: repetition penalty -> top-k -> top-p -> min-p -> temperature -> draw, in
// llama.cpp's order, so its users get what they expect from the same flags.
struct SamplerParams {
  float temp = 0.8f;            // <= 0: greedy (argmax, ties to the smallest id)
  int top_k = 40;               // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int repeat_last_n = 64;       // how many recent tokens the penalty looks at
  uint64_t seed = 0;
};
// An error names the parameter out of range.
Status validate(const SamplerParams& p);

}  // namespace tova
