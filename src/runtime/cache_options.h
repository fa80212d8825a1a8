// The library's side of a multi-state's options (tova/options.h): what a sequence reserves, and
// whether more tokens continue a state exactly.
#pragma once

#include <cstdint>

#include "model/model.h"
#include "tova/options.h"

namespace tova::runtime {

// K/V bytes a sequence under `o` allocates: its fixed size when bounded, or n_ctx tokens'
// worth when unbounded (what a server reserves for it). max_image: the engine's most tokens of
// one image (0: none), for the room an image's step and kept images take.
uint64_t reserve_bytes(const model::Model& m, const CacheOptions& o, int64_t n_prompt,
                       int64_t n_ctx, int max_image = 0);
// The same for a multi-state of the shape `so` (a prediction block's: Model::
// nextn_state_options) under o.
uint64_t reserve_bytes(kv::MultiStateOptions so, const CacheOptions& o, int64_t n_prompt,
                       int64_t n_ctx, int max_image = 0);

// Feeding more tokens to a state made with o gives what feeding them all from the start as one
// prompt gives (prefix reuse relies on it): exact prefill, and a policy that does not choose at
// a prompt's end (snapkv holds its first prompt whole and cuts it then; later tokens are
// decoding steps).
bool continues_exactly(const CacheOptions& o);

}  // namespace tova::runtime
