// Text that came from outside (a model's output, a client's bytes, a file) made fit for JSON:
// nlohmann-json's dump() throws on bytes that are not UTF-8 (type_error 316), and a model emits
// such bytes all the time (a byte-fallback token is half a character; a small or quantized model
// writes ill-formed sequences outright). Library code that puts outside text into JSON passes it
// through valid_utf8() first, or serialises with json_text() (src/core/json_text.h); front-ends
// (the server, the Python module) use the same two for what they send.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tova {

// The replacement character U+FFFD, as UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// True when `s` is well-formed UTF-8 (no surrogates, no overlong forms, nothing above U+10FFFF,
// no truncated character).
bool is_valid_utf8(std::string_view s);

// `s` with every ill-formed subsequence replaced by U+FFFD, one replacement per maximal subpart
// (Unicode 15, section 3.9, "U+FFFD substitution of maximal subparts"): what nlohmann-json's
// dump(error_handler_t::replace) writes, and so what llama-server sends for the same bytes, and
// what Python's bytes.decode("utf-8", "replace") gives. Valid text comes back unchanged.
std::string valid_utf8(std::string_view s);

// Appends the UTF-8 encoding of code point `cp` (U+FFFD for one above U+10FFFF; a surrogate is
// encoded as it is, for callers that pair or replace them themselves).
void append_utf8(std::string& out, uint32_t cp);

}  // namespace tova
