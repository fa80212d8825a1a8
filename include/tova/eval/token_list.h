// Token id lists given as files (--tokens of tova ppl / tova trace).
// Part of the evaluation API (tova/eval.h); each takes a loaded Engine and returns plain records.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tova/engine.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Inputs -----------------------------------------------------------------------------------
// Token id lists given as files (--tokens of `tova ppl` / `tova trace`): a JSON list of ids, or
// an object whose "tokens" member is that list. Every element must be an integer in
// [0, INT32_MAX]; whether an id fits the vocabulary is the caller's check (it knows the model).
// `source` (a path) prefixes error messages.
Result<std::vector<int32_t>> parse_token_list(std::string_view text, std::string_view source);

}  // namespace tova::eval
