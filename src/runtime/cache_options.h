// The library's side of a multi-state's options (tova/options.h): how many tokens join before
// an eviction, and what a sequence reserves.
#pragma once

#include <cstdint>

#include "model/model.h"
#include "tova/options.h"

namespace tova::runtime {

// The most tokens that join a layer before the policy evicts, for a prompt of n_prompt tokens.
int max_new_for(const PrefillMode& p, int64_t n_prompt);

// K/V bytes a sequence under `o` allocates: its fixed size when bounded, or n_ctx tokens'
// worth when unbounded (what a server reserves for it).
uint64_t reserve_bytes(const model::Model& m, const CacheOptions& o, int64_t n_prompt,
                       int64_t n_ctx);

}  // namespace tova::runtime
