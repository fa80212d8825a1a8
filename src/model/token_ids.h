// The one check that token ids lie in a model's vocabulary, with the one message every caller
// (Engine::check_token_ids, ppl, trace, the task evaluation) returns.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/result.h"

namespace tova::model {

// ok, or "WHAT: ID is outside the vocabulary [0, N_VOCAB)" for the first id that is not.
Status check_token_ids(std::span<const int32_t> ids, int n_vocab, std::string_view what);

}  // namespace tova::model
