// Harness: the token-id list reader (`--tokens FILE` of tova ppl / trace) on arbitrary text.
// What it accepts must be ids in [0, INT32_MAX], and re-reading its own JSON gives the same list.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "eval/token_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ids = tova::eval::parse_token_list(text, "fuzz.json");
  if (!ids.ok()) {
    if (ids.message().find('\n') != std::string::npos) __builtin_trap();  // one-line errors
    return 0;
  }
  std::string again = "[";
  for (size_t i = 0; i < ids->size(); ++i) {
    if ((*ids)[i] < 0) __builtin_trap();
    if (i > 0) again += ',';
    again += std::to_string((*ids)[i]);
  }
  again += ']';
  auto back = tova::eval::parse_token_list(again, "again.json");
  if (!back.ok() || *back != *ids) __builtin_trap();
  return 0;
}
