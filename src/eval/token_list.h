// Token id lists given as files (--tokens of `tova ppl` / `tova trace`): a JSON list of ids, or
// an object whose "tokens" member is that list. The text comes from outside: every element is
// checked, and an error names the source and the offending value.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tova/eval/token_list.h"

namespace tova::eval {

// Every element must be an integer in [0, INT32_MAX]; whether an id fits the vocabulary is the
// caller's check (it knows the model). `source` (a path) prefixes error messages.
Result<std::vector<int32_t>> parse_token_list(std::string_view text, std::string_view source);

}  // namespace tova::eval
