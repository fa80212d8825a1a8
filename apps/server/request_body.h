// A request body as JSON, or the 400 that says why not. JSON is UTF-8 (RFC 8259) and a client's
// text is what the model will read, so a string holding bytes that are not UTF-8 is refused, not
// repaired: the error names the field that holds them (`messages[0].content`), where
// nlohmann-json's parser only says "invalid string" at some byte offset. (llama-server lets that
// parser's exception become a 500.)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "job.h"

namespace tova::server {

// The dotted path of the string (value or key) that holds the first byte of `body` that is not
// UTF-8 (`messages[0].content`; a key: `a key of messages[0]`), or none when every byte is
// UTF-8 or the first bad one is outside any string.
std::optional<std::string> field_with_invalid_utf8(std::string_view body);

// The 400 for a body that nlohmann-json could not parse: a field that holds bytes that are not
// UTF-8, named (param: its top-level field), else "not valid JSON".
ApiError unparsable_body(std::string_view body);

}  // namespace tova::server
