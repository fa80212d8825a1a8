// JSON as text, whatever bytes its strings hold: the one serialisation library code uses for a
// JSON value that may carry outside text (a model's output, a client's or a file's strings).
// nlohmann-json's plain dump() throws type_error 316 on bytes that are not UTF-8; this writes
// U+FFFD for each ill-formed subsequence instead (tova/utf8.h), as llama-server does, and never
// throws for that reason. Header-only: only layers that link nlohmann-json include it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tova {

// `indent` as dump()'s: -1 compact, N spaces per level.
template <typename Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tova
