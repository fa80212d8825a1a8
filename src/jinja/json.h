// JSON in and out of template values: a JSON document (messages, tools) becomes a Value, and
// the `tojson` filter writes what Python's json.dumps writes, as Hugging Face calls it
// (ensure_ascii=False: non-ASCII characters stay as they are; keys in their order; ", " and
// ": " between items, or "," and newlines with an indent).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "core/result.h"
#include "jinja/value.h"

namespace tova::jinja {

Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps(indent=...): spaces (an int) or the string
  std::string item_separator = ", ";  // separators=(item, key)
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// An error for what json.dumps cannot write (an undefined, a macro, a namespace).
Result<std::string> to_json(const Value& v, const JsonDumpOptions& o, int max_depth = 500);

}  // namespace tova::jinja
